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
import { ProblemException } from '../errors/problem.exception';

const single = (header: string | string[] | undefined): string | undefined =>
  (Array.isArray(header) ? header[0] : header) || undefined;

/**
 * What a request is counted under: the API key it authenticated with, or else (an anonymous request
 * through a pre-configured proxy without `require_auth`, which would otherwise be an unmetered relay)
 * the proxy key it names.
 */
function trackedKey(req: RequestWithPrincipal): string | undefined {
  return req.principal ? single(req.headers['bt-api-key']) : single(req.headers['bt-proxy-key']);
}

/**
 * Rate limit per principal (RATE_LIMIT_PER_MINUTE), across all routes and instances. A request is
 * authenticated before it is counted: a `BT-API-KEY` that is not a valid key is a 401 (limited per
 * client address by the authenticator) and is counted for no key, so random header values neither pass
 * the limit nor leave a counter each. An anonymous proxy request counts against its proxy key. Keys are
 * tracked by their SHA-256 digest, never in clear; routes without a key (health, docs, the approval
 * page) are not limited here.
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
    if (isPublicRoute(this.reflector, context)) {
      if (!keyIsOptional(this.reflector, context)) return true;
      if (!hasApiKey(req)) return single(req.headers['bt-proxy-key']) === undefined;
    }
    // Throws 401 (or 429 for an address past its failures) before anything is counted.
    await this.authenticator.authenticate(req);
    return false;
  }

  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    return createHash('sha256')
      .update(trackedKey(req as unknown as RequestWithPrincipal) ?? '')
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
