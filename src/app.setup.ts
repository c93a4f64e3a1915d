import type { LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule, AppModuleOptions } from './app.module';
import { jsonBodyParser, rawBodyParser, requireJsonContentType } from './common/context/body-parser';
import { traceIdMiddleware } from './common/context/trace-id';
import { usePreparedStatements } from './common/unit-of-work/unit-of-work';
import { httpMetricsMiddleware } from './common/metrics/http-metrics';
import { Metrics } from './common/metrics/metrics';
import { setupOpenApi } from './common/openapi';
import { AppConfig } from './config/app-config';
import { proxyAnswerHeaders } from './modules/proxies/proxy-answer-headers';

/** Nest's own start-up listings (each module, each route: about a hundred lines) are debug, not info. */
const STARTUP_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
  'NestApplication',
]);

class QuietStartupLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, ...rest: unknown[]): void {
    const context = rest[rest.length - 1];
    if (typeof context === 'string' && STARTUP_CONTEXTS.has(context)) this.logger.debug(message, ...rest);
    else this.logger.log(message, ...rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.logger.error(message, ...rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.logger.warn(message, ...rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.logger.debug(message, ...rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.logger.verbose(message, ...rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.logger.fatal(message, ...rest);
  }
}

/** Everything main.ts and the e2e tests share: middleware (body parsing, trace ids, headers), OpenAPI. */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  app.useLogger(new QuietStartupLogger(app.get(Logger)));
  // Logged while the application was made; a start that fails shows its one line instead (main.ts).
  app.flushLogs();
  app.disable('x-powered-by');
  // Responses are computed per request; a weak ETag would hash every body for nothing.
  app.set('etag', false);
  const config = app.get(AppConfig);
  // First, so that the request durations cover everything below (the route: RouteLabelGuard).
  if (config.METRICS_ENABLED) app.use(httpMetricsMiddleware(app.get(Metrics)));
  // Security headers (helmet's defaults; the approval page sets its own stricter policy).
  app.use(helmet({ crossOriginEmbedderPolicy: false }));
  if (config.CORS_ORIGINS) {
    app.enableCors({
      origin: config.CORS_ORIGINS.split(','),
      allowedHeaders: [
        'BT-API-KEY',
        'BT-IDEMPOTENCY-KEY',
        'BT-TRACE-ID',
        'BT-PROXY-URL',
        'BT-PROXY-KEY',
        'Content-Type',
      ],
      exposedHeaders: ['BT-TRACE-ID', 'BT-IDEMPOTENCY-REPLAYED', 'BT-PROXY-ERROR', 'Retry-After'],
      maxAge: 600,
    });
  }
  app.use(traceIdMiddleware);
  // Every proxy answer carries the service's own content policy, whatever the destination sends.
  app.use('/proxy', proxyAnswerHeaders);
  // The proxy forwards any body: read as bytes, its errors marked as the proxy's own.
  app.use('/proxy', rawBodyParser({ 'BT-PROXY-ERROR': 'true' }));
  // Checkout.com signs its webhooks' bytes: read as they came, for the signature check.
  app.use('/orchestration/notifications/checkout', rawBodyParser());
  // The approval page's buttons are form posts whose (empty) bodies are never read; a card import's
  // body is an encrypted file, streamed to disk by its handler, which checks its type itself.
  app.use(requireJsonContentType(/^\/(proxy(\/|$)|orchestration\/approvals\/|tokens\/imports\/?$)/));
  app.use(jsonBodyParser());
  // Guards, interceptors, the validation pipe and the problem filter: `globalEnhancers` in app.module.ts.
  setupOpenApi(app);
  // A fresh visitor of the service's root finds the API's documentation.
  app.use((req: Request, res: Response, next: NextFunction) =>
    (req.method === 'GET' || req.method === 'HEAD') && req.path === '/' ? res.redirect(302, '/docs') : next(),
  );
  return app;
}

export async function createApp(
  config: AppConfig,
  options: AppModuleOptions = {},
): Promise<NestExpressApplication> {
  usePreparedStatements(config.DB_PREPARED_STATEMENTS);
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, options), {
    bodyParser: false,
    bufferLogs: true,
    // A failed start prints one line (main.ts), not Nest's buffered start-up listing and stack trace.
    autoFlushLogs: false,
    abortOnError: false,
  });
  return configureApp(app);
}
