import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/app-config';
import { permissionsFor } from '../src/common/auth/permissions';
import { dataSourceOptions, runMigrations } from '../src/database/data-source';
import { MIGRATIONS } from '../src/database/migrations';
import { Webhooks1795000000012 } from '../src/database/migrations/1795000000012-Webhooks';
import { createDatabase, dropDatabase } from './support/test-database';

const T = '0b000000-0000-4000-8000-000000000000';
const BOOTSTRAP = '0b000000-0000-4000-8000-0000000000b1';
const MADE_BY_API = '0b000000-0000-4000-8000-0000000000b2';
const PRIVATE = '0b000000-0000-4000-8000-0000000000b3';
const WEBHOOK_PERMISSIONS = ['webhook:create', 'webhook:delete', 'webhook:read', 'webhook:update'];
const TABLES = ['webhooks', 'webhook_events', 'webhook_deliveries'];

/**
 * Migration 12 (contract sections 2 and 13): the management application a tenant was created with holds
 * every management permission, so it is granted `webhook:*`; applications made through the API keep what
 * their creator gave them. down() takes the grant back and drops the three tables.
 */
describe('migration Webhooks1795000000012', () => {
  let name: string;
  let db: DataSource;
  const upTo = MIGRATIONS.indexOf(Webhooks1795000000012);
  const permissionsOf = async (id: string): Promise<string[]> => {
    const rows: { permissions: string[] }[] = await db.query(
      'SELECT permissions FROM applications WHERE id = $1',
      [id],
    );
    return rows[0].permissions;
  };
  const existing = async (): Promise<string[]> => {
    const rows: { name: string }[] = await db.query(
      `SELECT t AS name FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NOT NULL ORDER BY t`,
      [TABLES],
    );
    return rows.map((r) => r.name);
  };

  beforeAll(async () => {
    const created = await createDatabase('vault_test_webhooks');
    name = created.name;
    const config = loadConfig({ DATABASE_URL: created.url });
    const old = new DataSource({ ...dataSourceOptions(config), migrations: MIGRATIONS.slice(0, upTo) });
    await old.initialize();
    try {
      await runMigrations(old);
      await old.query(`INSERT INTO tenants (id, name) VALUES ('${T}', 't')`);
      const before = permissionsFor('management').filter((p) => !p.startsWith('webhook:'));
      await old.query(
        `INSERT INTO applications (id, tenant_id, name, type, permissions, created_by) VALUES
           ($1, $4, 'bootstrap', 'management', $5::text[], NULL),
           ($2, $4, 'made by the API', 'management', '{log:read,proxy:read}', $1),
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
