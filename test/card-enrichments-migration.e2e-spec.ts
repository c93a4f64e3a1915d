import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { CardEnrichments1795000000018 } from '../src/database/migrations/1795000000018-CardEnrichments';
import { runMigrations } from '../src/database/data-source';
import { beforeMigration, MigrationUnderTest } from './support/migrations';

const T = '0c000000-0000-4000-8000-000000000000';
const CARD = '0c000000-0000-4000-8000-0000000000c1';

/**
 * Migration 18 (docs/tokens.md): `tokens.card_bin`, empty for the card tokens made before it (their
 * objects carry no enrichments: the number is not read again to fill it); down() drops it.
 */
describe('migration CardEnrichments1795000000018', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;
  const columns = async (): Promise<string[]> => {
    const rows: { column_name: string }[] = await db.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'tokens' AND column_name = 'card_bin'`,
    );
    return rows.map((r) => r.column_name);
  };

  beforeAll(async () => {
    migration = await beforeMigration(CardEnrichments1795000000018, 'vault_test_enrichments', async (old) => {
      await old.query(`INSERT INTO tenants (id, name) VALUES ($1, 'enrichments')`, [T]);
      await old.query(
        `INSERT INTO tokens (id, tenant_id, type, data, mask, card_brand, fingerprint, fingerprint_expression,
                             containers, created_at)
         VALUES ($1, $2, 'card', '\\x00', '{"number": "XXXXXXXXXXXX4242"}', 'visa', 'fp', '{{ data.number }}',
                 '{/pci/high/}', now())`,
        [CARD, T],
      );
    });
    db = migration.db;
  });
  afterAll(() => migration?.close());

  it('adds card_bin, empty on existing cards; down() drops it', async () => {
    expect(await columns()).toEqual([]);
    await runMigrations(db);
    expect(await columns()).toEqual(['card_bin']);
    const [row]: { card_bin: string | null; card_brand: string }[] = await db.query(
      'SELECT card_bin, card_brand FROM tokens WHERE id = $1',
      [CARD],
    );
    expect(row).toEqual({ card_bin: null, card_brand: 'visa' });
    await db.undoLastMigration();
    expect(await columns()).toEqual([]);
  });
});
