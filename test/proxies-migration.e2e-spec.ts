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
import { Proxies1795000000011 } from '../src/database/migrations/1795000000011-Proxies';

const T = '0a000000-0000-4000-8000-000000000000';
const BOOTSTRAP = '0a000000-0000-4000-8000-0000000000a1';
const MADE_BY_API = '0a000000-0000-4000-8000-0000000000a2';
const PRIVATE = '0a000000-0000-4000-8000-0000000000a3';
const PROXY_PERMISSIONS = ['proxy:create', 'proxy:delete', 'proxy:read', 'proxy:update'];

/**
 * Migration 11 (docs/permissions.md): the management application a tenant was created with holds every
 * management permission, so it is granted `proxy:*`; applications made through the API keep what their
 * creator gave them.
 */
describe('migration Proxies1795000000011', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;
  const permissionsOf = (id: string) => applicationPermissions(db, id);

  beforeAll(async () => {
    migration = await beforeMigration(Proxies1795000000011, 'vault_test_proxies', (old) =>
      seedGrantApplications(
        old,
        { tenant: T, bootstrap: BOOTSTRAP, madeByApi: MADE_BY_API, private: PRIVATE },
        'proxy:',
        ['log:read'],
      ),
    );
    db = migration.db;
  });

  afterAll(async () => {
    await migration?.close();
  });

  it('grants proxy:* to the bootstrap management application only', async () => {
    expect(await runMigrations(db)).toEqual([new Proxies1795000000011().name]);
    expect([...(await permissionsOf(BOOTSTRAP))].sort()).toEqual([...permissionsFor('management')].sort());
    expect(await permissionsOf(MADE_BY_API)).toEqual(['log:read']);
    expect(await permissionsOf(PRIVATE)).toEqual(['token:read']);
    for (const p of PROXY_PERMISSIONS) expect(permissionsFor('management')).toContain(p);
  });

  it('down() takes them back and drops the table', async () => {
    await db.undoLastMigration({ transaction: 'all' });
    expect((await permissionsOf(BOOTSTRAP)).filter((p) => p.startsWith('proxy:'))).toEqual([]);
    const [{ exists }]: { exists: boolean }[] = await db.query(
      `SELECT to_regclass('proxies') IS NOT NULL AS exists`,
    );
    expect(exists).toBe(false);
  });
});
