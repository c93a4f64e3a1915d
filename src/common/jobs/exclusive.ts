import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../../config/app-config';
import { ShutdownState } from '../lifecycle/shutdown-state';
import { Metrics } from '../metrics/metrics';
import { MasterKeyRing } from '../crypto/master-keys';
import type { Change } from '../unit-of-work/change';
import { UnitOfWork } from '../unit-of-work/unit-of-work';
import { Clock } from './clock';
import { JobRunsRepository } from './job-runs.repository';

/** A scheduled run: the length of the job's period, so that each period runs once across instances. */
export interface Tick {
  tickMs: number;
}

/**
 * Runs a job's tick on at most one instance (none while the server is sealed): the work happens in a transaction that first takes
 * `pg_try_advisory_xact_lock(key)` (an instance that does not get it skips the tick). A scheduled run
 * (`tick` given) also claims its period in `job_runs` (primary key job + period start), so that a tick
 * runs once even when instances fire one after the other; the row records which instance ran it.
 */
@Injectable()
export class ExclusiveJobRunner {
  private readonly logger = new Logger('Jobs');
  /** This process, as recorded in `job_runs`. */
  readonly instanceId = randomUUID();

  constructor(
    private readonly work: UnitOfWork,
    private readonly clock: Clock,
    private readonly runs: JobRunsRepository,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
    shutdown: ShutdownState,
    /** A sealed server (KEY_PROVIDER=split) runs no job: most need keys, and none is urgent before unseal. */
    private readonly ring: MasterKeyRing,
  ) {
    shutdown.register({ name: 'scheduled jobs', stop: () => this.stop() });
  }

  /** Jobs of this process that `runAlone` is running now. */
  private readonly running = new Set<string>();
  /** Every run under way (`runAlone` and `run`), awaited by `stop`. */
  private readonly underWay = new Set<Promise<unknown>>();
  private stopped = false;

  /**
   * True once the process stops: no run starts any more, and a job that goes through several steps (a
   * settlement sweep, the checkpointer's batches) ends after the step it is in.
   */
  get stopping(): boolean {
    return this.stopped;
  }

  /**
   * No job starts after this; resolves once the runs under way have ended. A job's steps each commit
   * their own transaction (and hold no row across a vendor call), so the safe point is the end of a step.
   */
  async stop(): Promise<string> {
    this.stopped = true;
    const runs = this.underWay.size;
    await Promise.allSettled([...this.underWay]);
    return runs ? `${runs} run${runs === 1 ? '' : 's'} finished` : 'none running';
  }

  private track<T>(run: Promise<T>): Promise<T> {
    this.underWay.add(run);
    void run.finally(() => this.underWay.delete(run)).catch(() => undefined);
    return run;
  }

  /**
   * Runs a frequent job (every second: settlement, connection verification) on at most one instance
   * at a time, without wrapping it in a transaction: its work commits its own transactions and calls
   * vendors between them, holding no lock on any row. Across instances an advisory lock held by a
   * transaction of its own (JobRunsRepository.whileLocked) decides; the embedded database has one instance
   * by construction (its lock file), so only the process-level guard applies there (its one connection
   * cannot be held for the lock).
   */
  runAlone<T>(name: string, lockKey: number, work: () => Promise<T>): Promise<T | undefined> {
    if (this.stopped || this.ring.sealed || this.running.has(name)) return Promise.resolve(undefined);
    return this.track(this.runAloneNow(name, lockKey, work));
  }

  private async runAloneNow<T>(
    name: string,
    lockKey: number,
    work: () => Promise<T>,
  ): Promise<T | undefined> {
    this.running.add(name);
    try {
      const run = () => {
        this.metrics.jobRan(name);
        return work();
      };
      if (this.config.embedded) return await run();
      return (await this.runs.whileLocked(lockKey, run))?.value;
    } catch (error) {
      this.metrics.jobFailed(name);
      this.logger.error({ err: error, job: name }, `job ${name} failed`);
      return undefined;
    } finally {
      this.running.delete(name);
    }
  }

  /**
   * Runs `work` in one change (a transaction) that holds the job's lock, and its tick when one is given.
   * Undefined, without running, once the process stops.
   */
  run<T>(
    name: string,
    lockKey: number,
    work: (change: Change) => Promise<T>,
    tick?: Tick,
  ): Promise<T | undefined> {
    if (this.stopped || this.ring.sealed) return Promise.resolve(undefined);
    return this.track(this.runNow(name, lockKey, work, tick));
  }

  private async runNow<T>(
    name: string,
    lockKey: number,
    work: (change: Change) => Promise<T>,
    tick?: Tick,
  ): Promise<T | undefined> {
    try {
      return await this.work.transaction({}, async (change) => {
        if (!(await this.runs.tryLock(change, lockKey))) return undefined;
        if (tick && !(await this.claimTick(change, name, tick))) return undefined;
        this.metrics.jobRan(name);
        return work(change);
      });
    } catch (error) {
      this.metrics.jobFailed(name);
      this.logger.error({ err: error, job: name }, `job ${name} failed`);
      return undefined;
    }
  }

  private async claimTick(change: Change, name: string, tick: Tick): Promise<boolean> {
    const now = this.clock.now();
    const start = new Date(Math.floor(now.getTime() / tick.tickMs) * tick.tickMs);
    const claimed = await this.runs.claim(change, {
      job: name,
      tickStart: start,
      instanceId: this.instanceId,
      ranAt: now,
    });
    if (claimed && tick.tickMs >= 60_000)
      await this.runs.deleteRanBefore(change, new Date(now.getTime() - 2 * 86_400_000));
    return claimed;
  }
}
