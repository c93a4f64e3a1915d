import { Injectable } from '@nestjs/common';
import type { Change } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
import { affectedRows } from '../../../database/table';

const EXAMPLE_NOW = new Date('2026-01-01T00:00:00Z');

/** The vault's set-based DELETEs of rows whose `expires_at` has passed, in the retention job's transaction. */
@Injectable()
export class TokenRetentionRepository {
  /** Deletes the tokens of every tenant that expired by `now`. */
  @GenerateSql({ change: true, params: [EXAMPLE_NOW] })
  deleteExpiredTokens(change: Change, now: Date): Promise<number> {
    return this.deleteExpired(change, 'tokens', now);
  }

  /** Deletes the CVCs of every tenant kept past their hour by `now`. */
  @GenerateSql({ change: true, params: [EXAMPLE_NOW] })
  deleteExpiredCvcs(change: Change, now: Date): Promise<number> {
    return this.deleteExpired(change, 'token_cvcs', now);
  }

  private async deleteExpired(change: Change, table: 'tokens' | 'token_cvcs', now: Date): Promise<number> {
    const count = await affectedRows(change, `DELETE FROM ${table} WHERE expires_at <= $1`, [now]);
    return count;
  }
}
