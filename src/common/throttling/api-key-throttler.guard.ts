import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerLimitDetail } from '@nestjs/throttler';
import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { ProblemException } from '../errors/problem.exception';

/**
 * Rate limit per API key (RATE_LIMIT_PER_MINUTE), across all routes and instances. The key is tracked
 * by its SHA-256 digest, never in clear; requests without a key (health, docs, the approval page) are
 * not limited here.
 */
@Injectable()
export class ApiKeyThrottlerGuard extends ThrottlerGuard {
  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request>();
    return !req.headers['bt-api-key'];
  }

  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    const header = (req as unknown as Request).headers['bt-api-key'];
    const key = Array.isArray(header) ? header[0] : (header ?? '');
    return createHash('sha256').update(key).digest('hex');
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
      `This API key made more than ${detail.limit} requests this minute; retry in ${detail.timeToBlockExpire} seconds.`,
      { code: 'rate_limited', headers: { 'Retry-After': String(detail.timeToBlockExpire) } },
    );
  }
}
