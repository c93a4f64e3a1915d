import { Injectable, Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { Clock } from '../jobs/clock';
import { RateLimitsRepository } from './rate-limits.repository';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

interface Window {
  start: number;
  /** Hits every instance has recorded in PostgreSQL for this window, as of the last sync. */
  synced: number;
  /** Hits of this instance not yet added to PostgreSQL. */
  pending: number;
  lastSync: number;
}

/** Background sync period, and how close to the limit counting becomes exact (every request synced). */
const SYNC_MS = 1_000;
const EXACT_FROM = 0.8;

/**
 * Rate-limit counters shared by instances through PostgreSQL (`rate_limits`), for @nestjs/throttler.
 * Windows are fixed and aligned to the clock, so every instance agrees on them. Far from the limit a
 * request is counted locally and added to the shared row in batches (at least every second), which keeps
 * a database round trip off most requests; from 80% of the limit on, every request adds itself and
 * reads the shared total, so the limit holds exactly across instances where it matters.
 */
@Injectable()
export class PgThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger('RateLimits');
  private readonly windows = new Map<string, Window>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly counters: RateLimitsRepository,
    private readonly clock: Clock,
  ) {
    this.timer = setInterval(() => void this.flushAll(), SYNC_MS);
    this.timer.unref();
  }

  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const now = this.clock.now().getTime();
    const start = Math.floor(now / ttl) * ttl;
    let window = this.windows.get(key);
    if (!window || window.start !== start) {
      window = { start, synced: 0, pending: 0, lastSync: 0 };
      this.windows.set(key, window);
    }
    window.pending++;
    const batch = Math.max(1, Math.floor(limit / 20));
    if (
      window.synced + window.pending >= limit * EXACT_FROM ||
      window.pending >= batch ||
      now - window.lastSync >= SYNC_MS
    )
      await this.flush(key, window);
    const total = window.synced + window.pending;
    const secondsLeft = Math.max(1, Math.ceil((start + ttl - now) / 1000));
    return {
      totalHits: total,
      timeToExpire: secondsLeft,
      isBlocked: total > limit,
      timeToBlockExpire: secondsLeft,
    };
  }

  onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    return this.flushAll();
  }

  private async flush(key: string, window: Window): Promise<void> {
    const add = window.pending;
    window.pending = 0;
    try {
      const hits = await this.counters.add(key, new Date(window.start), add);
      window.synced = Math.max(window.synced, hits);
      window.lastSync = this.clock.now().getTime();
    } catch (error) {
      // The database is unreachable: keep counting locally (the request itself will fail or not on its own).
      window.pending += add;
      this.logger.warn({ err: error }, 'could not share a rate-limit count');
    }
  }

  private async flushAll(): Promise<void> {
    const now = this.clock.now().getTime();
    for (const [key, window] of this.windows) {
      if (window.pending > 0) await this.flush(key, window);
      else if (now - window.start > 2 * 3_600_000) this.windows.delete(key);
    }
  }
}
