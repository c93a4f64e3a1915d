import type { DataSource, QueryRunner } from 'typeorm';
import { GenerateSql } from './generate-sql';

/** Advisory locks of the service's own start-up work (see `LOCK_KEYS`). */
export class AdvisoryLocksRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Runs `work` in one transaction on a connection of its own that first takes
   * `pg_advisory_xact_lock(lockKey)`, waiting for it as long as another transaction holds it. Work that
   * fails rolls the whole transaction back. Transaction-scoped rather than session-level, so that it holds
   * behind a pooler in transaction mode (PgBouncer), which may run the statements of one client's session
   * on different server connections between transactions, but never within one.
   */
  // The example is the key of the migrations (LOCK_KEYS, which imports this file).
  @GenerateSql({ params: [72_001, () => Promise.resolve()] })
  async whileLocked<T>(lockKey: number, work: (runner: QueryRunner) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      await runner.query('SELECT pg_advisory_xact_lock($1)', [lockKey]);
      const result = await work(runner);
      await runner.commitTransaction();
      return result;
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      await runner.release();
    }
  }
}
