import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerLimitDetail } from '@nestjs/throttler';
import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { ProblemException } from '../errors/problem.exception';

/**
 * The key a request is counted under: its API key, or else the proxy key it names (an anonymous request
 * through a pre-configured proxy without `require_auth`, which would otherwise be an unmetered relay).
 */
function trackedKey(req: Request): string | undefined {
  for (const name of ['bt-api-key', 'bt-proxy-key']) {
    const header = req.headers[name];
    const key = Array.isArray(header) ? header[0] : header;
    if (key) return key;
  }
  return undefined;
}

/**
 * Rate limit per API key (RATE_LIMIT_PER_MINUTE), across all routes and instances; an anonymous proxy
 * request counts against its proxy key. The key is tracked by its SHA-256 digest, never in clear;
 * requests without either (health, docs, the approval page) are not limited here.
 */
@Injectable()
export class ApiKeyThrottlerGuard extends ThrottlerGuard {
  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    return trackedKey(context.switchToHttp().getRequest<Request>()) === undefined;
  }

  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    return createHash('sha256')
      .update(trackedKey(req as unknown as Request) ?? '')
      .digest('hex');
  }

  protected override generateKey(_context: ExecutionContext, tracker: string, name: string): string {
    return `${name}:${tracker}`;
  }

  protected override async throwThrottlingException(
    _context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw new ProblemException(
      429,
      `This key made more than ${detail.limit} requests this minute; retry in ${detail.timeToBlockExpire} seconds.`,
      { code: 'rate_limited', headers: { 'Retry-After': String(detail.timeToBlockExpire) } },
    );
  }
}
