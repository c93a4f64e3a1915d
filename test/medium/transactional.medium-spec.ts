import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import {
  afterCommit,
  inTransaction,
  onRequestCommit,
  Transactional,
  whenCommitted,
} from '../../src/common/context/transactional';
import { MediumContext, startMedium } from './support';

/** A service as the modules write them, on a scratch table of this test. */
@Injectable()
class Notes {
  constructor(readonly db: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @Transactional()
  async write(id: string, fail = false): Promise<{ id: string }> {
    await this.db.tx.query('INSERT INTO medium_notes (id, what) VALUES ($1, $2)', [id, 'change']);
    if (fail) throw new Error('refused after writing');
    return { id };
  }

  @Transactional()
  async writeTwice(id: string): Promise<{ id: string; twice: true }> {
    await this.write(id);
    await this.write(`${id}-2`);
    return { id, twice: true };
  }
}

describe('explicit transactions: @Transactional(), the request edge and afterCommit', () => {
  let m: MediumContext;
  let notes: Notes;
  const count = async (prefix: string): Promise<number> =>
    (
      await m.db.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM medium_notes WHERE id LIKE $1`, [
        `${prefix}%`,
      ])
    )[0].n;

  beforeAll(async () => {
    m = await startMedium();
    await m.db.query('CREATE TABLE IF NOT EXISTS medium_notes (id text PRIMARY KEY, what text NOT NULL)');
    notes = new Notes(m.get(TransactionHost));
  });

  afterAll(async () => {
    await m.db.query('DROP TABLE IF EXISTS medium_notes');
    await m.close();
  });

  const edgeRow = (id: string) => async (result: unknown) => {
    await notes.db.tx.query('INSERT INTO medium_notes (id, what) VALUES ($1, $2)', [
      `${id}-edge`,
      JSON.stringify(result),
    ]);
  };

  it('writes the edge work in the change’s transaction, with its result, once', async () => {
    const id = randomUUID();
    const edge = await m.run(async () => {
      const registered = onRequestCommit(edgeRow(id));
      await notes.writeTwice(id); // the inner call joins: one transaction, one edge run
      return registered;
    });
    expect(edge.ran).toEqual({ result: { id, twice: true } });
    expect(await count(id)).toBe(3);
    const [stored] = await m.db.query<{ what: string }[]>('SELECT what FROM medium_notes WHERE id = $1', [
      `${id}-edge`,
    ]);
    expect(JSON.parse(stored.what)).toEqual({ id, twice: true }); // the outer method's result
  });

  it('rolls the edge work back with a change that fails, and leaves it to the caller to retry', async () => {
    const id = randomUUID();
    const edge = await m.run(async () => {
      const registered = onRequestCommit(edgeRow(id));
      await expect(notes.write(id, true)).rejects.toThrow('refused after writing');
      return registered;
    });
    expect(edge.ran).toBeUndefined();
    expect(await count(id)).toBe(0);
  });

  it('runs afterCommit work only once the transaction has committed, never after a rollback', async () => {
    const id = randomUUID();
    const seen: number[] = [];
    const host: TransactionHost<TransactionalAdapterTypeOrm> = m.get(TransactionHost);
    class Later {
      @Transactional()
      async go(fail: boolean): Promise<void> {
        await host.tx.query('INSERT INTO medium_notes (id, what) VALUES ($1, $2)', [`${id}-${fail}`, 'x']);
        afterCommit(() => void count(id).then((n) => seen.push(n)));
        if (fail) throw new Error('no');
      }
    }
    await m.run(() => new Later().go(false));
    await m.run(() => new Later().go(true).catch(() => undefined));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen).toEqual([1]); // it saw its own committed row; the rolled-back one ran nothing
  });

  it('runs whenCommitted work after a commit, never after a rollback, and at once where nothing would run it', async () => {
    const host: TransactionHost<TransactionalAdapterTypeOrm> = m.get(TransactionHost);
    const seen: string[] = [];
    const step =
      (name: string, fail = false) =>
      async () => {
        whenCommitted(() => seen.push(name));
        seen.push(`${name} returns`);
        if (fail) throw new Error('no');
      };
    await m.run(() => inTransaction(step('committed')));
    await m.run(() => inTransaction(step('rolled back', true)).catch(() => undefined));
    // A bare transaction (afterCommit would throw there) and no transaction at all: at once.
    await m.run(() => host.withTransaction(step('bare')));
    await step('outside')();
    expect(seen).toEqual([
      'committed returns',
      'committed',
      'rolled back returns',
      'bare',
      'bare returns',
      'outside',
      'outside returns',
    ]);
  });

  it('refuses a second top-level write once the request has recorded its outcome', async () => {
    const id = randomUUID();
    await m.run(async () => {
      onRequestCommit(edgeRow(id));
      await notes.write(id);
      await expect(notes.write(`${id}-again`)).rejects.toThrow(/second top-level/);
    });
    expect(await count(id)).toBe(2);
  });
});
