import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { runMigrations } from '../src/database/data-source';
import {
  beforeMigration,
  MigrationUnderTest,
  permissionsOf as applicationPermissions,
  seedGrantApplications,
} from './support/migrations';
import { permissionsFor } from '../src/common/auth/permissions';
import { Wallets1795000000037 } from '../src/database/migrations/1795000000037-Wallets';

const T = '0c000000-0000-4000-8000-000000000000';
const BOOTSTRAP = '0c000000-0000-4000-8000-0000000000a1';
const MADE_BY_API = '0c000000-0000-4000-8000-0000000000a2';
const PRIVATE = '0c000000-0000-4000-8000-0000000000a3';
const TABLES = ['wallet_merchant_keys', 'wallet_replays'];

/**
 * Migration 37 (docs/wallets.md, docs/permissions.md): the wallets tables, and `wallet:manage` granted to
 * the management application a tenant was created with (it holds every management permission);
 * applications made through the API keep what their creator gave them. down() takes both back.
 */
describe('migration Wallets1795000000037', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;
  const permissionsOf = (id: string) => applicationPermissions(db, id);
  const existing = async (): Promise<string[]> =>
    (
      await db.query<{ name: string }[]>(
        `SELECT t AS name FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NOT NULL ORDER BY t`,
        [TABLES],
      )
    ).map((r) => r.name);

  beforeAll(async () => {
    migration = await beforeMigration(Wallets1795000000037, 'vault_test_wallets_migration', (old) =>
      seedGrantApplications(
        old,
        { tenant: T, bootstrap: BOOTSTRAP, madeByApi: MADE_BY_API, private: PRIVATE },
        'wallet:',
        ['log:read'],
      ),
    );
    db = migration.db;
  });

  afterAll(async () => {
    await migration?.close();
  });

  it('creates the tables and grants wallet:manage to the bootstrap management application only', async () => {
    expect(await existing()).toEqual([]);
    expect(await runMigrations(db)).toEqual([new Wallets1795000000037().name]);
    expect(await existing()).toEqual(TABLES);
    expect([...(await permissionsOf(BOOTSTRAP))].sort()).toEqual([...permissionsFor('management')].sort());
    expect(await permissionsOf(MADE_BY_API)).toEqual(['log:read']);
    expect(await permissionsOf(PRIVATE)).toEqual(['token:read']);
  });

  it('keeps a 6th active key of a wallet out, whatever writes it', async () => {
    const insert = (slot: number | null, status: string) =>
      db.query(
        `INSERT INTO wallet_merchant_keys (tenant_id, id, wallet, status, slot, private_key, public_key)
         VALUES ($1, gen_random_uuid(), 'google_pay', $2, $3, '\\x00', '\\x00')`,
        [T, status, slot],
      );
    for (let slot = 1; slot <= 5; slot++) await insert(slot, 'active');
    await expect(insert(6, 'active')).rejects.toThrow(/check/);
    await expect(insert(3, 'active')).rejects.toThrow(/duplicate key/);
    await expect(insert(null, 'active')).rejects.toThrow(/check/);
    await insert(null, 'pending');
  });

  it('down() takes them back and drops the tables', async () => {
    await db.undoLastMigration({ transaction: 'all' });
    expect((await permissionsOf(BOOTSTRAP)).filter((p) => p.startsWith('wallet:'))).toEqual([]);
    expect(await existing()).toEqual([]);
  });
});
