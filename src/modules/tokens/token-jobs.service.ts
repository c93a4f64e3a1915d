import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { Clock } from '../../common/jobs/clock';
import { ExclusiveJobRunner, Tick } from '../../common/jobs/exclusive';
import { LOCK_KEYS } from '../../database/data-source';

/** Scheduled clean-up of the vault: expired tokens and retained CVCs. Once per tick across instances. */
@Injectable()
export class TokenJobsService {
  constructor(
    private readonly jobs: ExclusiveJobRunner,
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
  ) {}

  @Cron(CronExpression.EVERY_MINUTE)
  scheduledPurgeExpiredTokens(): Promise<number | undefined> {
    return this.purgeExpiredTokens({ tickMs: 60_000 });
  }

  purgeExpiredTokens(tick?: Tick): Promise<number | undefined> {
    return this.deleteExpired('expired-tokens', LOCK_KEYS.jobExpiredTokens, 'tokens', tick);
  }

  /** CVCs are kept one hour at most (they are also deleted on first use in an authorization). */
  @Cron(CronExpression.EVERY_MINUTE)
  scheduledPurgeExpiredCvcs(): Promise<number | undefined> {
    return this.purgeExpiredCvcs({ tickMs: 60_000 });
  }

  purgeExpiredCvcs(tick?: Tick): Promise<number | undefined> {
    return this.deleteExpired('cvc-retention', LOCK_KEYS.jobCvcRetention, 'token_cvcs', tick);
  }

  /** One set-based DELETE of the rows whose `expires_at` has passed, under the job's lock. */
  private deleteExpired(
    job: string,
    lockKey: number,
    table: 'tokens' | 'token_cvcs',
    tick?: Tick,
  ): Promise<number | undefined> {
    return this.jobs.run(
      job,
      lockKey,
      async () => {
        const [, count]: [unknown, number] = await this.db.tx.query(
          `DELETE FROM ${table} WHERE expires_at <= $1`,
          [this.clock.now()],
        );
        return count;
      },
      tick,
    );
  }
}
