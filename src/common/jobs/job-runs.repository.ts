import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GenerateSql } from '../../database/generate-sql';
import { insertOf, type RowOf, queryRows } from '../../database/table';
import { JobRunEntity } from './entities/job-run.entity';
import type { Change } from '../unit-of-work/change';

/** One period of a job, as claimed in `job_runs`. */
export type JobTick = JobRunEntity;

/** The examples of the SQL snapshots (test/sql/job-runs.repository.sql). */
const EXAMPLE = {
  lockKey: 72_104,
  tick: {
    job: 'log-retention',
    tickStart: new Date('2026-01-01T00:00:00.000Z'),
    instanceId: '7d3c5a2e-0000-4000-8000-000000000001',
    ranAt: new Date('2026-01-01T00:00:00.250Z'),
  },
  cutoff: new Date('2025-12-30T00:00:00.000Z'),
};

/** The advisory locks and `job_runs` claims of scheduled jobs; every statement joins the given change. */
@Injectable()
export class JobRunsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Runs `work` while a transaction of its own, on a connection of its own, holds
   * `pg_try_advisory_xact_lock(key)`, so that the work itself may commit transactions of its own (and call
   * vendors between them) while no other instance runs it. Undefined when another instance holds the lock.
   * The lock's transaction writes nothing (it has no transaction id, so it holds back neither vacuum nor
   * the audit checkpointer's horizon); transaction-scoped rather than session-level, so that it holds behind
   * a pooler in transaction mode (PgBouncer), which keeps one server connection for a transaction but may
   * change it between two.
   */
  @GenerateSql(
    { name: 'locked', params: [EXAMPLE.lockKey, () => Promise.resolve()], answers: [[{ locked: true }]] },
    { name: 'held elsewhere', params: [EXAMPLE.lockKey, () => Promise.resolve()] },
  )
  async whileLocked<T>(lockKey: number, work: () => Promise<T>): Promise<{ value: T } | undefined> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      const rows = await queryRows<{ locked: boolean }>(
        runner,
        'SELECT pg_try_advisory_xact_lock($1) AS locked',
        [lockKey],
      );
      const result = rows[0]?.locked === true ? { value: await work() } : undefined;
      await runner.commitTransaction();
      return result;
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      await runner.release();
    }
  }

  /** `pg_try_advisory_xact_lock`: true when this transaction now holds the lock (released at its end). */
  @GenerateSql({ change: true, params: [EXAMPLE.lockKey] })
  async tryLock(change: Change, lockKey: number): Promise<boolean> {
    const rows = await queryRows<{ locked: boolean }>(
      change,
      'SELECT pg_try_advisory_xact_lock($1) AS locked',
      [lockKey],
    );
    return rows[0]?.locked === true;
  }

  /** Claims a tick (primary key job + period start): false when some instance has claimed it already. */
  @GenerateSql({ change: true, params: [EXAMPLE.tick] })
  async claim(change: Change, tick: JobTick): Promise<boolean> {
    const { sql, params } = insertOf(JobRunEntity, {
      job: tick.job,
      tick_start: tick.tickStart,
      instance_id: tick.instanceId,
      ran_at: tick.ranAt,
    });
    const claimed = await queryRows<Pick<RowOf<JobRunEntity>, 'job'>>(
      change,
      `${sql}
       ON CONFLICT (job, tick_start) DO NOTHING RETURNING job`,
      params,
    );
    return claimed.length > 0;
  }

  /** Forgets the runs recorded before `cutoff`. */
  @GenerateSql({ change: true, params: [EXAMPLE.cutoff] })
  async deleteRanBefore(change: Change, cutoff: Date): Promise<void> {
    await change.query('DELETE FROM job_runs WHERE ran_at < $1', [cutoff]);
  }
}
