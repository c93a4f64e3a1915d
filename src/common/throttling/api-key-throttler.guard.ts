import { ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  ThrottlerLimitDetail,
  type ThrottlerModuleOptions,
  type ThrottlerStorage,
} from '@nestjs/throttler';
import { createHash } from 'node:crypto';
import { ApiKeyAuthenticator, hasApiKey, isPublicRoute, keyIsOptional } from '../auth/api-key.guard';
import type { RequestWithPrincipal } from '../auth/principal';
import { rateLimited } from './rate-limiter';

/**
 * Rate limit per principal (RATE_LIMIT_PER_MINUTE), across all routes and instances. A request is
 * authenticated before it is counted: a `BT-API-KEY` that is not a valid key is a 401 (limited per
 * client address by the authenticator) and is counted for no key, so random header values neither pass
 * the limit nor leave a counter each. Keys are tracked by their SHA-256 digest, never in clear. Requests
 * without a key are not limited here: routes that need none (health, docs, the approval page), and the
 * anonymous proxy, which counts a request against its proxy key once it knows the proxy (RateLimiter).
 */
@Injectable()
export class ApiKeyThrottlerGuard extends ThrottlerGuard {
  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: ThrottlerStorage,
    reflector: Reflector,
    private readonly authenticator: ApiKeyAuthenticator,
  ) {
    super(options, storage, reflector);
  }

  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<RequestWithPrincipal>();
    if (isPublicRoute(this.reflector, context) && !(keyIsOptional(this.reflector, context) && hasApiKey(req)))
      return true;
    // Throws 401 (or 429 for an address past its failures) before anything is counted.
    await this.authenticator.authenticate(req);
    return false;
  }

  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    const header = (req as unknown as RequestWithPrincipal).headers['bt-api-key'];
    return createHash('sha256')
      .update((Array.isArray(header) ? header[0] : header) ?? '')
      .digest('hex');
  }

  protected override generateKey(_context: ExecutionContext, tracker: string, name: string): string {
    return `${name}:${tracker}`;
  }

  protected override async throwThrottlingException(
    _context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw rateLimited(detail.limit, detail.timeToBlockExpire);
  }
}
