import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GenerateSql } from '../../database/generate-sql';
import { insertOf, type RowOf, affectedRows } from '../../database/table';
import { RateLimitEntity } from './entities/rate-limit.entity';
import type { Change } from '../unit-of-work/change';

/**
 * The `rate_limits` counters (one row per key and window). Adding hits is a statement of its own
 * (`dataSource`), never part of a request's transaction: a count must hold even when the request fails.
 */
@Injectable()
export class RateLimitsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Adds `hits` to a window's shared count; returns the count every instance has added so far. */
  @GenerateSql({
    params: ['default:3f2a', new Date('2026-01-01T00:00:00.000Z'), 5],
    answers: [[{ hits: 5 }]],
  })
  async add(key: string, windowStart: Date, hits: number): Promise<number> {
    const { sql, params } = insertOf(RateLimitEntity, { key, window_start: windowStart, hits });
    const rows: Pick<RowOf<RateLimitEntity>, 'hits'>[] = await this.dataSource.query(
      `${sql}
       ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limits.hits + EXCLUDED.hits
       RETURNING hits`,
      params,
    );
    return rows[0].hits;
  }

  /** Deletes the windows that started before `cutoff`: one set-based statement, in the job's transaction. */
  @GenerateSql({ change: true, params: [new Date('2026-01-01T00:00:00.000Z')] })
  async deleteStartedBefore(change: Change, cutoff: Date): Promise<number> {
    const count = await affectedRows(change, 'DELETE FROM rate_limits WHERE window_start < $1', [cutoff]);
    return count;
  }
}
