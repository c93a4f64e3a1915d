import type { AppConfig } from '../../config/app-config';
import { ShutdownState } from '../lifecycle/shutdown-state';
import type { Metrics } from '../metrics/metrics';
import type { UnitOfWork } from '../unit-of-work/unit-of-work';
import { MasterKeyRing } from '../crypto/master-keys';
import { Clock } from './clock';
import { ExclusiveJobRunner } from './exclusive';
import type { JobRunsRepository } from './job-runs.repository';

describe('ExclusiveJobRunner at shutdown', () => {
  function runner() {
    const shutdown = new ShutdownState();
    const jobs = new ExclusiveJobRunner(
      {} as UnitOfWork,
      new Clock(),
      {} as JobRunsRepository,
      { embedded: true } as AppConfig,
      { jobRan: () => undefined, jobFailed: () => undefined } as unknown as Metrics,
      shutdown,
      new MasterKeyRing([{ version: 'v1', key: Buffer.alloc(32, 1) }], 'spec'),
    );
    return { jobs, shutdown };
  }

  it('waits for the run under way, then starts none', async () => {
    const { jobs, shutdown } = runner();
    let finish!: () => void;
    const steps: string[] = [];
    const running = jobs.runAlone('settlement', 1, async () => {
      steps.push('started');
      await new Promise<void>((resolve) => (finish = resolve));
      steps.push('finished');
      return 'done';
    });
    const stopped = shutdown.stopWork(Date.now() + 1000);
    expect(jobs.stopping).toBe(true);
    expect(await jobs.runAlone('verification', 2, async () => steps.push('not run'))).toBeUndefined();
    let resolved = false;
    void stopped.then(() => (resolved = true));
    // A turn of the event loop: the stop still waits for the run (no clock involved).
    await new Promise((resolve) => setImmediate(resolve));
    expect(resolved).toBe(false);
    finish();
    expect(await running).toBe('done');
    expect(await stopped).toEqual(['scheduled jobs: 1 run finished']);
    expect(steps).toEqual(['started', 'finished']);
  });

  it('says when nothing ran', async () => {
    const { shutdown } = runner();
    expect(await shutdown.stopWork(Date.now())).toEqual(['scheduled jobs: none running']);
  });
});
