import { DynamicModule, Module, Provider } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { LoggerModule } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { AuditModule } from './common/audit/audit.module';
import { AuditInterceptor } from './common/audit/audit.interceptor';
import { ApiKeyGuard } from './common/auth/api-key.guard';
import { AuthModule } from './common/auth/auth.module';
import { PermissionsGuard } from './common/auth/permissions.guard';
import { loggerParams } from './common/context/logging';
import { CryptoModule } from './common/crypto/crypto.module';
import { EventsModule } from './common/events/events.module';
import { JobsModule } from './common/jobs/jobs.module';
import { LifecycleModule } from './common/lifecycle/lifecycle.module';
import { RouteLabelGuard } from './common/metrics/http-metrics';
import { MetricsModule } from './common/metrics/metrics.module';
import { ApiKeyThrottlerGuard } from './common/throttling/api-key-throttler.guard';
import { ThrottlingModule } from './common/throttling/throttling.module';
import { ProblemDetailsFilter } from './common/errors/problem-details.filter';
import { createValidationPipe } from './common/errors/validation';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { AdminModule } from './modules/admin/admin.module';
import { ApplicationsModule } from './modules/applications/applications.module';
import { ElementsModule } from './modules/elements/elements.module';
import { CustodyModule } from './modules/custody/custody.module';
import { SealedGuard } from './modules/custody/sealed.guard';
import { HealthModule } from './modules/health/health.module';
import { ImportsModule } from './modules/imports/imports.module';
import { IdempotencyInterceptor } from './modules/idempotency/idempotency.interceptor';
import { IdempotencyModule } from './modules/idempotency/idempotency.module';
import { LogsModule } from './modules/logs/logs.module';
import { MetricsEndpointModule } from './modules/metrics/metrics.module';
import { OrchestrationModule } from './modules/orchestration/orchestration.module';
import { ProxiesModule } from './modules/proxies/proxies.module';
import { BootstrapService } from './modules/tenants/bootstrap.service';
import { TenantsRepositoryModule } from './modules/tenants/tenants-repository.module';
import { TenantsModule } from './modules/tenants/tenants.module';
import { SessionsModule } from './modules/sessions/sessions.module';
import { TokensModule } from './modules/tokens/tokens.module';
import { WebhookOutboxModule } from './modules/webhooks/webhook-outbox';
import { UnitOfWorkModule } from './common/unit-of-work/unit-of-work';
import { WalletsModule } from './modules/wallets/wallets.module';
import { WebhooksModule } from './modules/webhooks/webhooks.module';

export interface AppModuleOptions {
  /** Where log lines go (stdout when absent); tests capture them to search for secrets. */
  logStream?: DestinationStream;
}

/** Infrastructure shared by the HTTP application and the CLI: config, logs, database, request context. */
export function coreImports(config: AppConfig, options: AppModuleOptions = {}): DynamicModule['imports'] {
  return [
    ConfigModule.forRoot(config),
    LoggerModule.forRoot(loggerParams(config, options.logStream)),
    DatabaseModule,
    LifecycleModule,
    MetricsModule,
    AuthModule,
    CryptoModule.forRoot(TenantsRepositoryModule),
    EventsModule.forRoot(WebhookOutboxModule),
    JobsModule,
    AuditModule,
    UnitOfWorkModule,
  ];
}

/**
 * Every global guard, interceptor, pipe and exception filter of the HTTP application, registered here and
 * nowhere else, in the order they run (docs/architecture.md):
 *
 *   guards        1. RouteLabelGuard         the route's template, for the request metrics (only with
 *                                            METRICS_ENABLED); first, so that refused requests have it too
 *                    SealedGuard             (KEY_PROVIDER=split only) 503 `sealed` until the custodians
 *                                            unseal the server, but for liveness and /sys/*
 *                 2. ApiKeyGuard             BT-API-KEY: 401 when missing or not valid, 429 for an
 *                                            address with too many failed authentications
 *                 3. PermissionsGuard        key kind, authorized session, the route's permission: 403
 *                 4. ApiKeyThrottlerGuard    the key's rate limit: 429
 *   interceptors  5. IdempotencyInterceptor  BT-IDEMPOTENCY-KEY: claims it, replays, or runs what follows,
 *                                            handing its claim to the handler's change (@Origin())
 *                 6. AuditInterceptor        the audit row of a read or search (a write records its
 *                                            rows in its change)
 *   pipe          7. ValidationPipe          the handler's body, query and parameters: 400 by field
 *   filter        8. ProblemDetailsFilter    anything thrown above becomes problem+json (docs/errors.md)
 *
 * Guards run in the order they are listed, then interceptors in theirs; pipes run after both, just
 * before the handler. The only route-scoped enhancer is the proxy's error filter
 * (`ProxyErrorFilter`, on `/proxy`). Middleware (body parsing, trace ids, security headers) runs before
 * all of them and is set up in app.setup.ts.
 */
export function globalEnhancers(config: AppConfig): Provider[] {
  return [
    ...(config.METRICS_ENABLED ? [{ provide: APP_GUARD, useClass: RouteLabelGuard }] : []),
    ...(config.KEY_PROVIDER === 'split' ? [{ provide: APP_GUARD, useExisting: SealedGuard }] : []),
    { provide: APP_GUARD, useExisting: ApiKeyGuard },
    { provide: APP_GUARD, useExisting: PermissionsGuard },
    { provide: APP_GUARD, useExisting: ApiKeyThrottlerGuard },
    { provide: APP_INTERCEPTOR, useExisting: IdempotencyInterceptor },
    { provide: APP_INTERCEPTOR, useExisting: AuditInterceptor },
    { provide: APP_PIPE, useFactory: createValidationPipe },
    { provide: APP_FILTER, useClass: ProblemDetailsFilter },
  ];
}

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, options: AppModuleOptions = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...(coreImports(config, options) ?? []),
        // Without the scheduler the @Cron and @Interval methods are never called.
        ...(config.JOBS_ENABLED ? [ScheduleModule.forRoot()] : []),
        ThrottlingModule,
        ApplicationsModule,
        TenantsModule,
        HealthModule,
        // GET /metrics exists only when enabled: otherwise it is an unknown path (404).
        ...(config.METRICS_ENABLED ? [MetricsEndpointModule] : []),
        TokensModule,
        SessionsModule,
        LogsModule,
        IdempotencyModule,
        OrchestrationModule,
        ImportsModule,
        ProxiesModule,
        WebhooksModule,
        WalletsModule,
        ElementsModule,
        CustodyModule,
        // With the embedded database, the CLI's requests come to the server (control socket).
        AdminModule.forRoot({ controlSocket: config.embedded, heartbeat: true }),
      ],
      providers: [BootstrapService, ...globalEnhancers(config)],
    };
  }
}
