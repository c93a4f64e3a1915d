import type { DataSource, QueryRunner } from 'typeorm';
import { GenerateSql } from './generate-sql';

/** Session-level advisory locks of the service's own start-up work (see `LOCK_KEYS`). */
export class AdvisoryLocksRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Runs `work` on one connection of its own while that connection holds `pg_advisory_lock(lockKey)`,
   * waiting for the lock as long as another session holds it; the lock is released before the
   * connection goes back to the pool, whether or not the work succeeded.
   */
  // The example is the key of the migrations (LOCK_KEYS, which imports this file).
  @GenerateSql({ params: [72_001, () => Promise.resolve()] })
  async whileLocked<T>(lockKey: number, work: (runner: QueryRunner) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.query('SELECT pg_advisory_lock($1)', [lockKey]);
      try {
        return await work(runner);
      } finally {
        await runner.query('SELECT pg_advisory_unlock($1)', [lockKey]);
      }
    } finally {
      await runner.release();
    }
  }
}
