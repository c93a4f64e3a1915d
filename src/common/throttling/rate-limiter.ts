import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { AppConfig } from '../../config/app-config';
import { ProblemException } from '../errors/problem.exception';
import { PgThrottlerStorage } from './pg-throttler.storage';

export const RATE_LIMIT_NAME = 'default';
export const RATE_LIMIT_TTL_MS = 60_000;

/** The counter key of a key (an API key, a proxy key): its SHA-256 digest, never the key in clear. */
export const rateLimitKey = (key: string): string =>
  `${RATE_LIMIT_NAME}:${createHash('sha256').update(key).digest('hex')}`;

/** 429 problem with Retry-After. */
export const rateLimited = (limit: number, retryAfterSeconds: number): ProblemException =>
  new ProblemException(
    429,
    `This key made more than ${limit} requests this minute; retry in ${retryAfterSeconds} seconds.`,
    { code: 'rate_limited', headers: { 'Retry-After': String(retryAfterSeconds) } },
  );

/**
 * Counts a request against a key that only a handler can recognise: an anonymous request through a
 * pre-configured proxy counts against its proxy key once the proxy is known to exist, so that made-up
 * proxy keys leave no counter each. The same counters and limit (RATE_LIMIT_PER_MINUTE) as the guard's.
 */
@Injectable()
export class RateLimiter {
  constructor(
    private readonly storage: PgThrottlerStorage,
    private readonly config: AppConfig,
  ) {}

  /**
   * Counts one request of `tracker` under the limit `name` (its own counters, `limit` per minute, shared by
   * the instances like the keys'): the seconds until the minute ends when this request is past the limit,
   * else undefined. The tracker is stored as its SHA-256 digest, never in clear.
   */
  async hit(name: string, tracker: string, limit: number): Promise<number | undefined> {
    const key = `${name}:${createHash('sha256').update(tracker).digest('hex')}`;
    const record = await this.storage.increment(key, RATE_LIMIT_TTL_MS, limit);
    return record.isBlocked ? record.timeToBlockExpire : undefined;
  }

  async consume(key: string): Promise<void> {
    const limit = this.config.RATE_LIMIT_PER_MINUTE;
    const record = await this.storage.increment(rateLimitKey(key), RATE_LIMIT_TTL_MS, limit);
    if (record.isBlocked) throw rateLimited(limit, record.timeToBlockExpire);
  }
}
