import { DataSource } from 'typeorm';
import { permissionsFor } from '../../src/common/auth/permissions';
import { loadConfig } from '../../src/config/load-config';
import { dataSourceOptions, runMigrations } from '../../src/database/data-source';
import { MIGRATIONS } from '../../src/database/migrations';
import { createDatabase, dropDatabase } from './test-database';

/** A database of its own, migrated up to `migration` (excluded) and seeded; `db` then runs `migration` itself. */
export interface MigrationUnderTest {
  db: DataSource;
  /** The database's URL, to start the service on it. */
  url: string;
  close(): Promise<void>;
}

export async function beforeMigration(
  migration: (typeof MIGRATIONS)[number],
  prefix: string,
  seed: (old: DataSource) => Promise<void>,
): Promise<MigrationUnderTest> {
  const upTo = MIGRATIONS.indexOf(migration);
  const created = await createDatabase(prefix);
  const config = loadConfig({ DATABASE_URL: created.url });
  const old = new DataSource({ ...dataSourceOptions(config), migrations: MIGRATIONS.slice(0, upTo) });
  await old.initialize();
  try {
    await runMigrations(old);
    await seed(old);
  } finally {
    await old.destroy();
  }
  const db = new DataSource({ ...dataSourceOptions(config), migrations: MIGRATIONS.slice(0, upTo + 1) });
  await db.initialize();
  return {
    db,
    url: created.url,
    close: async () => {
      await db.destroy();
      await dropDatabase(created.name);
    },
  };
}

/** The applications a bootstrap-grant migration meets: one tenant's bootstrap, API-made and private ones. */
export interface GrantSeed {
  tenant: string;
  bootstrap: string;
  madeByApi: string;
  private: string;
}

/**
 * Seeds `ids`: the bootstrap management application holding every management permission but those of
 * `added` (the prefix the migration grants, e.g. `proxy:`), one made through the API holding
 * `madeByApiPermissions`, and a private one holding `token:read`.
 */
export async function seedGrantApplications(
  old: DataSource,
  ids: GrantSeed,
  added: string,
  madeByApiPermissions: string[],
): Promise<void> {
  await old.query(`INSERT INTO tenants (id, name) VALUES ($1, 't')`, [ids.tenant]);
  const before = permissionsFor('management').filter((p) => !p.startsWith(added));
  await old.query(
    `INSERT INTO applications (id, tenant_id, name, type, permissions, created_by) VALUES
       ($1, $4, 'bootstrap', 'management', $5::text[], NULL),
       ($2, $4, 'made by the API', 'management', $6::text[], $1),
       ($3, $4, 'private', 'private', '{token:read}', $1)`,
    [ids.bootstrap, ids.madeByApi, ids.private, ids.tenant, before, madeByApiPermissions],
  );
}

export async function permissionsOf(db: DataSource, id: string): Promise<string[]> {
  const rows: { permissions: string[] }[] = await db.query(
    'SELECT permissions FROM applications WHERE id = $1',
    [id],
  );
  return rows[0].permissions;
}
