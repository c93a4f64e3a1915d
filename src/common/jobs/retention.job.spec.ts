import { Change } from '../unit-of-work/change';
import { Clock } from './clock';
import type { ExclusiveJobRunner, Tick } from './exclusive';
import { RetentionJob, RetentionPolicy } from './retention.job';

/** A runner that runs every job at once and records how it was asked to. */
class RecordingRunner {
  readonly runs: { name: string; lockKey: number; tick?: Tick }[] = [];

  run<T>(
    name: string,
    lockKey: number,
    work: (change: Change) => Promise<T>,
    tick?: Tick,
  ): Promise<T | undefined> {
    this.runs.push({ name, lockKey, ...(tick ? { tick } : {}) });
    return work(new Change({}, 'statement', undefined, () => Promise.reject(new Error('no database'))));
  }
}

describe('RetentionJob', () => {
  const MINUTE = 60_000;
  let runner: RecordingRunner;
  let clock: Clock;
  let job: RetentionJob;
  const purged: { name: string; now: Date }[] = [];
  const policy = (name: string, periodMs: number, lockKey = 1): RetentionPolicy => ({
    name,
    lockKey,
    periodMs,
    purge: (_change, now) => {
      purged.push({ name, now });
      return Promise.resolve(3);
    },
  });

  beforeEach(() => {
    runner = new RecordingRunner();
    clock = new Clock();
    job = new RetentionJob(runner as unknown as ExclusiveJobRunner, clock);
    purged.length = 0;
    job.register(policy('minutely', MINUTE, 11));
    job.register(policy('ten-minutes', 10 * MINUTE, 12));
    job.register(policy('hourly', 60 * MINUTE, 13));
  });
  afterEach(() => jest.restoreAllMocks());

  it('runs a policy now under its lock without claiming a period, with the clock of the service', async () => {
    clock.advance(-86_400_000);
    expect(await job.runNow('hourly')).toBe(3);
    expect(runner.runs).toEqual([{ name: 'hourly', lockKey: 13 }]);
    expect(Date.now() - purged[0].now.getTime()).toBeGreaterThanOrEqual(86_400_000);
  });

  it('a scheduled run of a policy claims its period', async () => {
    await job.runTick('ten-minutes');
    expect(runner.runs).toEqual([{ name: 'ten-minutes', lockKey: 12, tick: { tickMs: 10 * MINUTE } }]);
  });

  it('each minute runs the policies whose period starts then, even when the timer fires a little off', async () => {
    const at = async (time: number): Promise<string[]> => {
      runner.runs.length = 0;
      jest.spyOn(Date, 'now').mockReturnValue(time);
      await job.scheduled();
      return runner.runs.map((run) => run.name).sort();
    };
    const hour = Date.UTC(2030, 0, 1, 12);
    expect(await at(hour + 3)).toEqual(['hourly', 'minutely', 'ten-minutes']);
    expect(await at(hour + 10 * MINUTE - 4)).toEqual(['minutely', 'ten-minutes']);
    expect(await at(hour + 11 * MINUTE)).toEqual(['minutely']);
  });

  it('refuses a name registered twice, a period that is not whole minutes, and unknown names', () => {
    expect(() => job.register(policy('hourly', MINUTE))).toThrow(/registered twice/);
    expect(() => job.register(policy('odd', 90_000))).toThrow(/whole minutes/);
    expect(() => job.runNow('nothing')).toThrow(/no retention policy nothing/);
  });
});
