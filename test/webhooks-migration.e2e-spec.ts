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
import { Webhooks1795000000012 } from '../src/database/migrations/1795000000012-Webhooks';

const T = '0b000000-0000-4000-8000-000000000000';
const BOOTSTRAP = '0b000000-0000-4000-8000-0000000000b1';
const MADE_BY_API = '0b000000-0000-4000-8000-0000000000b2';
const PRIVATE = '0b000000-0000-4000-8000-0000000000b3';
const WEBHOOK_PERMISSIONS = ['webhook:create', 'webhook:delete', 'webhook:read', 'webhook:update'];
const TABLES = ['webhooks', 'webhook_events', 'webhook_deliveries'];

/**
 * Migration 12 (docs/permissions.md, docs/webhooks.md): the management application a tenant was created with holds
 * every management permission, so it is granted `webhook:*`; applications made through the API keep what
 * their creator gave them. down() takes the grant back and drops the three tables.
 */
describe('migration Webhooks1795000000012', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;
  const permissionsOf = (id: string) => applicationPermissions(db, id);
  const existing = async (): Promise<string[]> => {
    const rows: { name: string }[] = await db.query(
      `SELECT t AS name FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NOT NULL ORDER BY t`,
      [TABLES],
    );
    return rows.map((r) => r.name);
  };

  beforeAll(async () => {
    migration = await beforeMigration(Webhooks1795000000012, 'vault_test_webhooks', (old) =>
      seedGrantApplications(
        old,
        { tenant: T, bootstrap: BOOTSTRAP, madeByApi: MADE_BY_API, private: PRIVATE },
        'webhook:',
        ['log:read', 'proxy:read'],
      ),
    );
    db = migration.db;
  });

  afterAll(async () => {
    await migration?.close();
  });

  it('creates the tables and grants webhook:* to the bootstrap management application only', async () => {
    expect(await existing()).toEqual([]);
    expect(await runMigrations(db)).toEqual([new Webhooks1795000000012().name]);
    expect(await existing()).toEqual([...TABLES].sort());
    expect([...(await permissionsOf(BOOTSTRAP))].sort()).toEqual([...permissionsFor('management')].sort());
    expect(await permissionsOf(MADE_BY_API)).toEqual(['log:read', 'proxy:read']);
    expect(await permissionsOf(PRIVATE)).toEqual(['token:read']);
    for (const p of WEBHOOK_PERMISSIONS) expect(permissionsFor('management')).toContain(p);
  });

  it('down() takes them back and drops the tables', async () => {
    await db.undoLastMigration({ transaction: 'all' });
    expect((await permissionsOf(BOOTSTRAP)).filter((p) => p.startsWith('webhook:'))).toEqual([]);
    expect([...(await permissionsOf(BOOTSTRAP))].sort()).toEqual(
      permissionsFor('management')
        .filter((p) => !p.startsWith('webhook:'))
        .sort(),
    );
    expect(await permissionsOf(MADE_BY_API)).toEqual(['log:read', 'proxy:read']);
    expect(await existing()).toEqual([]);
  });
});
