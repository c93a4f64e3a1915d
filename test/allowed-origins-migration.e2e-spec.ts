import type { DataSource } from 'typeorm';
import { runMigrations } from '../src/database/data-source';
import { AllowedOrigins1795000000032 } from '../src/database/migrations/1795000000032-AllowedOrigins';
import { beforeMigration, MigrationUnderTest } from './support/migrations';

const T = '0e000000-0000-4000-8000-000000000001';

/** Migration 32: public applications get no allowed origins (embeddable nowhere), others none at all. */
describe('migration AllowedOrigins1795000000032', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;

  beforeAll(async () => {
    migration = await beforeMigration(AllowedOrigins1795000000032, 'vault_test_origins', async (old) => {
      await old.query(`INSERT INTO tenants (id, name) VALUES ($1, 't')`, [T]);
      await old.query(
        `INSERT INTO applications (tenant_id, id, name, type, permissions)
         VALUES ($1, '0e000000-0000-4000-8000-0000000000a1', 'pub', 'public', '{token:create}'),
                ($1, '0e000000-0000-4000-8000-0000000000a2', 'pvt', 'private', '{token:read}')`,
        [T],
      );
    });
    db = migration.db;
  });
  afterAll(async () => {
    await migration?.close();
  });

  it('gives public applications an empty list and the others none; down() drops the column', async () => {
    expect(await runMigrations(db)).toEqual([new AllowedOrigins1795000000032().name]);
    expect(await db.query(`SELECT type, allowed_origins FROM applications ORDER BY name`)).toEqual([
      { type: 'public', allowed_origins: [] },
      { type: 'private', allowed_origins: null },
    ]);
    await db.undoLastMigration({ transaction: 'all' });
    const [{ n }] = await db.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM information_schema.columns
        WHERE table_name = 'applications' AND column_name = 'allowed_origins'`,
    );
    expect(n).toBe(0);
  });
});
