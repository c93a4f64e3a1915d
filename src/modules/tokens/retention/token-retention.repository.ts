import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Change } from '../../../common/unit-of-work/change';

/** The vault's set-based DELETEs of rows whose `expires_at` has passed, in the retention job's transaction. */
@Injectable()
export class TokenRetentionRepository {
  constructor(private readonly db: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Deletes the tokens of every tenant that expired by `now`. */
  deleteExpiredTokens(change: Change, now: Date): Promise<number> {
    return this.deleteExpired(change, 'tokens', now);
  }

  /** Deletes the CVCs of every tenant kept past their hour by `now`. */
  deleteExpiredCvcs(change: Change, now: Date): Promise<number> {
    return this.deleteExpired(change, 'token_cvcs', now);
  }

  private async deleteExpired(change: Change, table: 'tokens' | 'token_cvcs', now: Date): Promise<number> {
    const [, count] = await change.manager.query<[unknown, number]>(
      `DELETE FROM ${table} WHERE expires_at <= $1`,
      [now],
    );
    return count;
  }
}
