import { randomUUID } from 'node:crypto';
import { Change, IdempotencyClaim, Origin, partOf } from '../../src/common/unit-of-work/change';
import { UnitOfWork } from '../../src/common/unit-of-work/unit-of-work';
import { MediumContext, startMedium } from './support';
import { waitFor } from '../support/wait';

/** The unit of work on the run's PostgreSQL, with a scratch table of this test. */
describe('UnitOfWork: one change per write, with its audit rows, its idempotency record and after-commit work', () => {
  let m: MediumContext;
  let work: UnitOfWork;
  let tenantId: string;

  const note = (change: Change, id: string, what = 'change') =>
    change.write(({ p, name }) => ({
      ctes: [
        `${name('note')} AS (INSERT INTO medium_uow_notes (id, what) VALUES (${p.add(id)}, ${p.add(what)}))`,
      ],
    }));
  const notes = async (prefix: string): Promise<string[]> =>
    (
      await m.db.query<{ id: string }[]>('SELECT id FROM medium_uow_notes WHERE id LIKE $1 ORDER BY id', [
        `${prefix}%`,
      ])
    ).map((r) => r.id);
  const auditRows = async (entityId: string): Promise<{ message: string; actor_type: string }[]> =>
    m.db.query('SELECT message, actor_type FROM audit_logs WHERE tenant_id = $1 AND entity_id = $2', [
      tenantId,
      entityId,
    ]);

  /** A claim that stores the response in the scratch table, as the idempotency module's does in its own. */
  const claim = (id: string): IdempotencyClaim & { recorded: unknown[] } => {
    const recorded: unknown[] = [];
    return {
      recorded,
      record: async (change, result) => {
        recorded.push(result);
        await note(change, `${id}-record`, JSON.stringify(result));
      },
      pin: (change, resourceId) => note(change, `${id}-pin-${resourceId}`),
      withhold: () => undefined,
    };
  };

  beforeAll(async () => {
    m = await startMedium();
    await m.db.query('CREATE TABLE IF NOT EXISTS medium_uow_notes (id text PRIMARY KEY, what text NOT NULL)');
    work = m.get(UnitOfWork);
    tenantId = await m.newTenant();
  });

  afterAll(async () => {
    await m.db.query('DROP TABLE IF EXISTS medium_uow_notes');
    await m.close();
  });

  const origin = (extra: Partial<Origin> = {}): Origin => ({
    actor: { tenantId, applicationId: null, system: true },
    ...extra,
  });

  for (const mode of ['transaction', 'statement'] as const) {
    describe(`a ${mode}`, () => {
      const run = <T>(o: Origin, fn: (change: Change) => Promise<T>) =>
        mode === 'transaction' ? work.transaction(o, fn) : work.statement(o, fn);

      it('commits its writes with its audit rows and its idempotency record; after-commit work runs after', async () => {
        const id = randomUUID();
        const claimed = claim(id);
        const seen: string[][] = [];
        const result = await run(origin({ idempotency: claimed }), async (change) => {
          await note(change, id);
          change.audit({ entityType: 'token', entityId: id, operation: 'create', message: 'Token created' });
          change.afterCommit(() => void notes(id).then((rows) => seen.push(rows)));
          return { id };
        });
        expect(result).toEqual({ id });
        expect(await notes(id)).toEqual([id, `${id}-record`]);
        expect(claimed.recorded).toEqual([{ id }]);
        expect(await auditRows(id)).toEqual([{ message: 'Token created', actor_type: 'system' }]);
        // The after-commit work reads on the pool: wait for its answer, not for a turn of the event loop.
        await waitFor(() => seen.length > 0, { what: 'the after-commit read' });
        expect(seen).toEqual([[id, `${id}-record`]]);
      });

      it('writes nothing, no audit row, no record and no after-commit work when a write is refused', async () => {
        const id = randomUUID();
        let after = 0;
        const refusal = new Error('refused');
        await expect(
          run(origin({ idempotency: claim(id) }), async (change) => {
            await note(change, id);
            change.audit({
              entityType: 'token',
              entityId: id,
              operation: 'create',
              message: 'Token created',
            });
            change.afterCommit(() => after++);
            await change.write(({ refuse }) => ({ ctes: [], result: refuse('true') }), {
              refused: () => refusal,
            });
            return { id };
          }),
        ).rejects.toBe(refusal);
        expect(await notes(id)).toEqual([]);
        expect(await auditRows(id)).toEqual([]);
        expect(after).toBe(0);
      });

      it('a part of a request pins its resource but leaves the response to be recorded after the handler', async () => {
        const id = randomUUID();
        const claimed = claim(id);
        await run(partOf(origin({ idempotency: claimed })), async (change) => {
          await change.pinResource('r1');
          return { id };
        });
        expect(await notes(id)).toEqual([`${id}-pin-r1`]);
        expect(claimed.recorded).toEqual([]);
      });
    });
  }

  it('a transaction reads its own writes; a one-statement change refuses to read', async () => {
    const id = randomUUID();
    const rows = await work.transaction(origin(), async (change) => {
      await note(change, id);
      return change.query<{ id: string }>('SELECT id FROM medium_uow_notes WHERE id = $1', [id]);
    });
    expect(rows).toEqual([{ id }]);
    await expect(work.statement(origin(), (change) => change.query('SELECT 1'))).rejects.toThrow(
      /one-statement change/,
    );
  });

  it('a throw in the work rolls the transaction back', async () => {
    const id = randomUUID();
    await expect(
      work.transaction(origin(), async (change) => {
        await note(change, id);
        throw new Error('after writing');
      }),
    ).rejects.toThrow('after writing');
    expect(await notes(id)).toEqual([]);
  });
});
