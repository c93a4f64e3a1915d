import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { permissionsFor } from '../src/common/auth/permissions';
import { runMigrations } from '../src/database/data-source';
import { RelayRefunds1795000000040 } from '../src/database/migrations/1795000000040-RelayRefunds';
import {
  beforeMigration,
  MigrationUnderTest,
  permissionsOf,
  seedGrantApplications,
} from './support/migrations';

const T = '0e000000-0000-4000-8000-000000000000';
const BOOTSTRAP = '0e000000-0000-4000-8000-0000000000b1';
const MADE_BY_API = '0e000000-0000-4000-8000-0000000000b2';
const PRIVATE = '0e000000-0000-4000-8000-0000000000b3';

/**
 * Migration 40 (docs/payments.md, "Relay refunds"): the relay refunds' table, its primary key tenant first,
 * and `orchestration:relay` granted to the bootstrap management application only. down() takes it back.
 */
describe('migration RelayRefunds1795000000040', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;

  beforeAll(async () => {
    migration = await beforeMigration(RelayRefunds1795000000040, 'vault_test_relay_refunds', (old) =>
      seedGrantApplications(
        old,
        { tenant: T, bootstrap: BOOTSTRAP, madeByApi: MADE_BY_API, private: PRIVATE },
        'orchestration:relay',
        ['log:read'],
      ),
    );
    db = migration.db;
  });
  afterAll(async () => {
    await migration?.close();
  });

  const insert = (id: string, amount: number) =>
    db.query(
      `INSERT INTO relay_refunds (tenant_id, id, connection_id, vendor_payment_id, amount, currency, status,
         created_at, updated_at)
       VALUES ($1, $2, $1, 'pi_1', $3, 'USD', 'processing', now(), now())`,
      [T, id, amount],
    );

  it('creates relay_refunds (primary key tenant_id, id) and grants orchestration:relay to the bootstrap application only', async () => {
    expect(await runMigrations(db)).toEqual([new RelayRefunds1795000000040().name]);
    const key = await db.query<{ column_name: string }[]>(
      `SELECT a.attname AS column_name FROM pg_index i
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = 'relay_refunds'::regclass AND i.indisprimary
        ORDER BY array_position(i.indkey::int2[], a.attnum)`,
    );
    expect(key.map((k) => k.column_name)).toEqual(['tenant_id', 'id']);
    expect([...(await permissionsOf(db, BOOTSTRAP))].sort()).toEqual(
      [...permissionsFor('management')].sort(),
    );
    expect(await permissionsOf(db, MADE_BY_API)).toEqual(['log:read']);
    expect(await permissionsOf(db, PRIVATE)).toEqual(['token:read']);
    await insert('0e000000-0000-4000-8000-0000000000e1', 100);
    await expect(insert('0e000000-0000-4000-8000-0000000000e2', 0)).rejects.toThrow(/check/);
  });

  it('down() takes the grant back and drops the table', async () => {
    await db.undoLastMigration({ transaction: 'all' });
    expect(await permissionsOf(db, BOOTSTRAP)).not.toContain('orchestration:relay');
    expect((await db.query(`SELECT to_regclass('relay_refunds') AS t`))[0].t).toBeNull();
  });
});
