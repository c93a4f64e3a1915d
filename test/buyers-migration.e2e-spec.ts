import type { DataSource } from 'typeorm';
import { Buyers1795000000031 } from '../src/database/migrations/1795000000031-Buyers';
import { runMigrations } from '../src/database/data-source';
import { beforeMigration, MigrationUnderTest } from './support/migrations';

const T = '0d000000-0000-4000-8000-000000000001';
const CONNECTION = '0d000000-0000-4000-8000-0000000000c1';
const TRANSACTION = '0d000000-0000-4000-8000-0000000000a1';
const BUYER = '0d000000-0000-4000-8000-0000000000b1';
const [KEPT, DELETED] = ['tok_kept', 'tok_deleted'];

/**
 * Migration 31: buyers and their stored cards. A transaction made before has no buyer and stores nothing;
 * a stored card goes with its buyer (foreign key) and with its token (the trigger of migration 28, which
 * now deletes these rows too); down() takes all of it back, and the trigger deletes only what it did.
 */
describe('migration Buyers1795000000031', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;

  beforeAll(async () => {
    migration = await beforeMigration(Buyers1795000000031, 'vault_test_buyers', async (old) => {
      await old.query(`INSERT INTO tenants (id, name) VALUES ($1, 't')`, [T]);
      for (const id of [KEPT, DELETED])
        await old.query(
          `INSERT INTO tokens (id, tenant_id, type, data, fingerprint, fingerprint_expression, containers, created_at)
           VALUES ($1, $2, 'card', '\\xaa', $1, '{{ data.number }}', '{/pci/high/}', now())`,
          [id, T],
        );
      await old.query(
        `INSERT INTO connections (id, tenant_id, formula_id, method, display_name, fields, accepted_countries,
                                  accepted_currencies, active, status, three_d_secure_enabled, created_at, updated_at)
         VALUES ($1, $2, 'stripe-card', 'card', 'Stripe', '[]', '{US}', '{USD}', true, 'available', false, now(), now())`,
        [CONNECTION, T],
      );
      await old.query(
        `INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, intent, amount, currency,
                                   payment_source, merchant_initiated, is_subsequent_payment, payment_method,
                                   created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'authorization_succeeded', 'authorize', 100, 'USD', 'ecommerce', false, false, '{}',
                 now(), now())`,
        [TRANSACTION, T, CONNECTION, KEPT],
      );
    });
    db = migration.db;
  });
  afterAll(async () => {
    await migration?.close();
  });

  it('gives earlier transactions no buyer and nothing to store', async () => {
    expect(await runMigrations(db)).toEqual([new Buyers1795000000031().name]);
    expect(
      await db.query(
        `SELECT buyer_id, buyer_external_identifier, buyer_display_name, store_payment_method FROM transactions`,
      ),
    ).toEqual([
      {
        buyer_id: null,
        buyer_external_identifier: null,
        buyer_display_name: null,
        store_payment_method: false,
      },
    ]);
  });

  it('a stored card goes with its token, and every stored card with its buyer; an external identifier is unique', async () => {
    await db.query(
      `INSERT INTO buyers (tenant_id, id, external_identifier, created_at, updated_at) VALUES ($1, $2, 'c-1', now(), now())`,
      [T, BUYER],
    );
    await expect(
      db.query(
        `INSERT INTO buyers (tenant_id, id, external_identifier, created_at, updated_at)
         VALUES ($1, gen_random_uuid(), 'c-1', now(), now())`,
        [T],
      ),
    ).rejects.toThrow(/buyers_external_identifier_key/);
    for (const token of [KEPT, DELETED])
      await db.query(
        `INSERT INTO buyer_payment_methods (tenant_id, token_id, buyer_id, fingerprint, created_at)
         VALUES ($1, $2, $3, $2, now())`,
        [T, token, BUYER],
      );
    await db.query(`DELETE FROM tokens WHERE id = $1`, [DELETED]);
    const stored = async () =>
      (await db.query<{ token_id: string }[]>(`SELECT token_id FROM buyer_payment_methods`)).map(
        (r) => r.token_id,
      );
    expect(await stored()).toEqual([KEPT]);
    await db.query(`DELETE FROM buyers WHERE id = $1`, [BUYER]);
    expect(await stored()).toEqual([]);
    expect(await db.query(`SELECT id FROM tokens`)).toEqual([{ id: KEPT }]);
  });

  it('down() drops the tables and columns, and a token deleted then takes only its own rows', async () => {
    await db.undoLastMigration({ transaction: 'all' });
    const tables = await db.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('buyers', 'buyer_payment_methods')`,
    );
    expect(tables[0].n).toBe(0);
    const columns = await db.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM information_schema.columns
        WHERE table_name = 'transactions' AND column_name LIKE '%buyer%' OR column_name = 'store_payment_method'`,
    );
    expect(columns[0].n).toBe(0);
    await db.query(`DELETE FROM transactions`);
    await db.query(`DELETE FROM tokens WHERE id = $1`, [KEPT]);
    expect(await db.query(`SELECT id FROM tokens`)).toEqual([]);
  });
});
