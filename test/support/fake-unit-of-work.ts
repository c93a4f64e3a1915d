import type { EntityManager } from 'typeorm';
import { Change, Origin } from '../../src/common/unit-of-work/change';
import type { UnitOfWork } from '../../src/common/unit-of-work/unit-of-work';

/**
 * A UnitOfWork for service specs (no database): each change runs against in-memory fakes of the
 * repositories, which ignore it; what the change collected (audit rows, events, after-commit work) is
 * kept in `committed` once its work returns, or in `rolledBack` when it throws. `query` and `manager`
 * refuse: a fake repository never touches them.
 */
export class FakeUnitOfWork {
  readonly committed: Change[] = [];
  readonly rolledBack: Change[] = [];

  transaction<T>(origin: Origin, work: (change: Change) => Promise<T>): Promise<T> {
    return this.run(origin, 'transaction', work);
  }

  statement<T>(origin: Origin, work: (change: Change) => Promise<T>): Promise<T> {
    return this.run(origin, 'statement', work);
  }

  /** The audit rows of every committed change, in order. */
  get audit(): Change['entries'] {
    return this.committed.flatMap((change) => change.entries);
  }

  /** The events of every committed change, in order. */
  get events(): Change['events'] {
    return this.committed.flatMap((change) => change.events);
  }

  /** Typed as the real runner, for a service's constructor. */
  asUnitOfWork(): UnitOfWork {
    return this as unknown as UnitOfWork;
  }

  private async run<T>(
    origin: Origin,
    mode: 'transaction' | 'statement',
    work: (change: Change) => Promise<T>,
  ): Promise<T> {
    const refuse = () => {
      throw new Error('a service spec reaches the database through a repository fake, never the change');
    };
    const manager = new Proxy({}, { get: refuse }) as EntityManager;
    const change = new Change(origin, mode, mode === 'transaction' ? manager : undefined, refuse);
    try {
      const value = await work(change);
      this.committed.push(change);
      for (const fn of change.committed) fn();
      return value;
    } catch (error) {
      this.rolledBack.push(change);
      throw error;
    }
  }
}
