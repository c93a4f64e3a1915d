import 'reflect-metadata';
import type { INestApplicationContext, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClsService } from 'nestjs-cls';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module';
import type { Principal } from '../../src/common/auth/principal';
import { loadConfig } from '../../src/config/app-config';
import { TenantsService } from '../../src/modules/tenants/tenants.service';

/**
 * The medium tier: services and repositories of the real application, on the run's PostgreSQL
 * database, with no HTTP in between (no guards, pipes or interceptors) and no scheduled jobs.
 */
export interface MediumContext {
  get<T>(type: Type<T>): T;
  db: DataSource;
  /** Runs work in a request-like context (CLS), as a handler or a job would. */
  run<T>(work: () => Promise<T>): Promise<T>;
  newTenant(): Promise<string>;
  close(): Promise<void>;
}

export async function startMedium(): Promise<MediumContext> {
  const config = loadConfig({ ...process.env, BOOTSTRAP: 'false', JOBS_ENABLED: 'false', LOG_LEVEL: 'warn' });
  const ctx: INestApplicationContext = await NestFactory.createApplicationContext(AppModule.forRoot(config), {
    logger: false,
    abortOnError: false,
  });
  await ctx.init();
  const cls = ctx.get(ClsService);
  const run = <T>(work: () => Promise<T>): Promise<T> => cls.run(work);
  return {
    get: (type) => ctx.get(type),
    db: ctx.get(DataSource),
    run,
    newTenant: async () => (await run(() => ctx.get(TenantsService).createTenant('medium tenant'))).tenant_id,
    close: () => ctx.close(),
  };
}

/** A private application's principal holding `permissions`, as the guards would resolve it. */
export function principal(tenantId: string, permissions: string[]): Principal {
  return {
    tenantId,
    applicationId: tenantId,
    applicationType: 'private',
    keyKind: 'private',
    keyId: 'medium',
    authorized: true,
    permissions,
    rules: [],
  };
}
