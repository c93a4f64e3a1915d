import { Injectable } from '@nestjs/common';
import { addressGroup } from '../../../common/auth/auth-failures';
import { addFieldError, type FieldErrors, ProblemException } from '../../../common/errors/problem.exception';
import { RateLimiter } from '../../../common/throttling/rate-limiter';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { AppConfig } from '../../../config/app-config';
import { TokensErrorCode, TokensException } from '../tokens.errors';

/** Tokens one tokenize request of a public key or a session may create. */
export const PUBLIC_MAX_TOKENS_PER_REQUEST = 10;
const LIMIT_NAME = 'public-tokenize';

/**
 * What a public key (or a session, which counts for the public application that created it) may
 * tokenize: such keys sit in browsers and apps, where anyone can take them, so that nothing bounds
 * what they create but these limits. A request creates at most 10 tokens, and each client address (the
 * one TRUST_PROXY lets the service see; IPv6 per /64) makes at most PUBLIC_TOKENIZE_PER_MINUTE tokenize
 * requests per minute per public application, counted across instances like the per-key limit. Both
 * are checked before anything is read or written. Private keys are not concerned.
 */
@Injectable()
export class PublicTokenizeLimit {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly config: AppConfig,
  ) {}

  /** 400 for a public key or session creating more than 10 tokens, naming the first field past them. */
  checkSize(origin: RequestOrigin, paths: string[]): void {
    if (origin.actor.applicationType !== 'public' || paths.length <= PUBLIC_MAX_TOKENS_PER_REQUEST) return;
    const errors: FieldErrors = {};
    addFieldError(
      errors,
      paths[PUBLIC_MAX_TOKENS_PER_REQUEST] || '(body)',
      `past the ${PUBLIC_MAX_TOKENS_PER_REQUEST} tokens a public key or session may create at once`,
    );
    throw new TokensException(
      TokensErrorCode.TooManyTokens,
      `A tokenize request with a public key or a session creates at most ${PUBLIC_MAX_TOKENS_PER_REQUEST} tokens; ` +
        `this one has ${paths.length}.`,
      errors,
    );
  }

  /** Counts a tokenize request of a public key or session: 429 with Retry-After past this minute's. */
  async count(origin: RequestOrigin): Promise<void> {
    const who = origin.actor;
    if (who.applicationType !== 'public') return;
    const limit = this.config.PUBLIC_TOKENIZE_PER_MINUTE;
    const client = addressGroup(origin.client ?? 'unknown');
    const retryAfter = await this.limiter.hit(LIMIT_NAME, `${who.applicationId}\n${client}`, limit);
    if (retryAfter !== undefined)
      throw new ProblemException(
        429,
        `This address made more than ${limit} tokenize requests this minute with this public application's ` +
          `keys; retry in ${retryAfter} seconds.`,
        { code: 'rate_limited', headers: { 'Retry-After': String(retryAfter) } },
      );
  }
}
