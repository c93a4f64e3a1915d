import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/app-config';
import { permissionsFor } from '../src/common/auth/permissions';
import { dataSourceOptions, runMigrations } from '../src/database/data-source';
import { MIGRATIONS } from '../src/database/migrations';
import { Proxies1795000000011 } from '../src/database/migrations/1795000000011-Proxies';
import { createDatabase, dropDatabase } from './support/test-database';

const T = '0a000000-0000-4000-8000-000000000000';
const BOOTSTRAP = '0a000000-0000-4000-8000-0000000000a1';
const MADE_BY_API = '0a000000-0000-4000-8000-0000000000a2';
const PRIVATE = '0a000000-0000-4000-8000-0000000000a3';
const PROXY_PERMISSIONS = ['proxy:create', 'proxy:delete', 'proxy:read', 'proxy:update'];

/**
 * Migration 11 (contract section 2): the management application a tenant was created with holds every
 * management permission, so it is granted `proxy:*`; applications made through the API keep what their
 * creator gave them.
 */
describe('migration Proxies1795000000011', () => {
  let name: string;
  let db: DataSource;
  const upTo = MIGRATIONS.indexOf(Proxies1795000000011);
  const permissionsOf = async (id: string): Promise<string[]> => {
    const rows: { permissions: string[] }[] = await db.query(
      'SELECT permissions FROM applications WHERE id = $1',
      [id],
    );
    return rows[0].permissions;
  };

  beforeAll(async () => {
    const created = await createDatabase('vault_test_proxies');
    name = created.name;
    const config = loadConfig({ DATABASE_URL: created.url });
    const old = new DataSource({ ...dataSourceOptions(config), migrations: MIGRATIONS.slice(0, upTo) });
    await old.initialize();
    try {
      await runMigrations(old);
      await old.query(`INSERT INTO tenants (id, name) VALUES ('${T}', 't')`);
      const before = permissionsFor('management').filter((p) => !p.startsWith('proxy:'));
      await old.query(
        `INSERT INTO applications (id, tenant_id, name, type, permissions, created_by) VALUES
           ($1, $4, 'bootstrap', 'management', $5::text[], NULL),
           ($2, $4, 'made by the API', 'management', '{log:read}', $1),
           ($3, $4, 'private', 'private', '{token:read}', $1)`,
        [BOOTSTRAP, MADE_BY_API, PRIVATE, T, before],
      );
    } finally {
      await old.destroy();
    }
    db = new DataSource({ ...dataSourceOptions(config), migrations: MIGRATIONS.slice(0, upTo + 1) });
    await db.initialize();
  });

  afterAll(async () => {
    await db?.destroy();
    if (name) await dropDatabase(name);
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
