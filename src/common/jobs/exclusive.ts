import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';

/**
 * Runs a scheduled job's tick on at most one instance at a time: the work happens in a transaction that
 * first takes `pg_try_advisory_xact_lock(key)`; an instance that does not get the lock skips the tick.
 */
@Injectable()
export class ExclusiveJobRunner {
  private readonly logger = new Logger('Jobs');

  constructor(
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
  ) {}

  async run<T>(name: string, lockKey: number, work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await this.cls.run(() =>
        this.db.withTransaction(async () => {
          const rows: { locked: boolean }[] = await this.db.tx.query(
            'SELECT pg_try_advisory_xact_lock($1) AS locked',
            [lockKey],
          );
          if (!rows[0]?.locked) return undefined;
          return work();
        }),
      );
    } catch (error) {
      this.logger.error({ err: error, job: name }, `job ${name} failed`);
      return undefined;
    }
  }
}
