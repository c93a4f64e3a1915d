import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { performance } from 'node:perf_hooks';
import type { Metrics } from './metrics';

const STARTED = Symbol('metrics:started');
const ROUTE = Symbol('metrics:route');

type TimedRequest = Request & { [STARTED]?: number; [ROUTE]?: string };

/**
 * Times every request into `http_request_duration_seconds`, mounted before everything else so that the
 * whole handling is measured. One listener function serves every response: per request, only the
 * start time and the observation. A response never finished (its client left first) is not counted.
 * The route label is what `RouteLabelGuard` recorded, else `unmatched`.
 */
export function httpMetricsMiddleware(
  metrics: Metrics,
): (req: Request, res: Response, next: NextFunction) => void {
  function finished(this: Response): void {
    const req = this.req as TimedRequest;
    const started = req[STARTED];
    if (started === undefined) return;
    metrics.requestFinished(
      req.method,
      req[ROUTE] ?? 'unmatched',
      this.statusCode,
      (performance.now() - started) / 1000,
    );
  }
  return (req, res, next) => {
    (req as TimedRequest)[STARTED] = performance.now();
    res.once('finish', finished);
    next();
  };
}

/**
 * Records the template of the route a request reached (`/tokens/:id`, as Nest registered it with
 * Express), never its concrete path. Only a route handler's guards run, so a request that no route of
 * the API took (an unknown path, a body the parser refused, the /docs pages) keeps none: `unmatched`.
 * Express's own `req.route` alone cannot tell: Nest mounts its middleware (the request context) as a
 * catch-all route, which an unknown path reaches last. First in the root module's list of global
 * enhancers (`globalEnhancers` in app.module.ts), so that a request the API key guard
 * refuses still has its route. It lets everything through.
 */
@Injectable()
export class RouteLabelGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (context.getType() === 'http') {
      const req = context.switchToHttp().getRequest<TimedRequest>();
      const path = (req.route as { path?: unknown } | undefined)?.path;
      if (typeof path === 'string') req[ROUTE] = path;
    }
    return true;
  }
}
