import { Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import type { Change } from '../unit-of-work/change';
import { Clock } from './clock';
import { ExclusiveJobRunner, Tick } from './exclusive';

const MINUTE = 60_000;

/** What a module deletes once it is past retention, and how often; registered with `RetentionJob`. */
export interface RetentionPolicy {
  /** The job's name in `job_runs` and in the logs. */
  name: string;
  /** Its advisory lock key (one of LOCK_KEYS), so that one instance purges at a time. */
  lockKey: number;
  /** How often it runs: whole minutes, each period once across instances. */
  periodMs: number;
  /** Deletes what is past retention at `now` (the service's clock) in the job's change; returns how many rows. */
  purge(change: Change, now: Date): Promise<number>;
}

/**
 * The one retention job: every minute, each registered policy whose period starts that minute runs
 * through `ExclusiveJobRunner` (its advisory lock, and a `job_runs` claim of the period), so that each
 * period runs once across instances. Modules register their own policies, so this knows no table.
 */
@Injectable()
export class RetentionJob {
  private readonly policies = new Map<string, RetentionPolicy>();

  constructor(
    private readonly jobs: ExclusiveJobRunner,
    private readonly clock: Clock,
  ) {}

  register(policy: RetentionPolicy): void {
    if (this.policies.has(policy.name))
      throw new Error(`retention policy ${policy.name} is registered twice`);
    if (policy.periodMs <= 0 || policy.periodMs % MINUTE !== 0)
      throw new Error(`retention policy ${policy.name}: the period must be whole minutes`);
    this.policies.set(policy.name, policy);
  }

  @Cron(CronExpression.EVERY_MINUTE)
  async scheduled(): Promise<void> {
    // The minute this run was fired for (the timer may fire a little early or late).
    const minute = Math.round(Date.now() / MINUTE) * MINUTE;
    const due = [...this.policies.values()].filter((policy) => minute % policy.periodMs === 0);
    await Promise.all(due.map((policy) => this.run(policy, { tickMs: policy.periodMs })));
  }

  /** A scheduled run of one policy: its current period runs once across instances (claimed in `job_runs`). */
  runTick(name: string): Promise<number | undefined> {
    const policy = this.policy(name);
    return this.run(policy, { tickMs: policy.periodMs });
  }

  /** Runs one policy now, outside the schedule: under its lock, without claiming a period. */
  runNow(name: string): Promise<number | undefined> {
    return this.run(this.policy(name));
  }

  private run(policy: RetentionPolicy, tick?: Tick): Promise<number | undefined> {
    return this.jobs.run(
      policy.name,
      policy.lockKey,
      (change) => policy.purge(change, this.clock.now()),
      tick,
    );
  }

  private policy(name: string): RetentionPolicy {
    const policy = this.policies.get(name);
    if (!policy) throw new Error(`no retention policy ${name}`);
    return policy;
  }
}
