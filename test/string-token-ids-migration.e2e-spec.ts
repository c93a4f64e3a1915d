import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { runMigrations } from '../src/database/data-source';
import { StringTokenIds1795000000016 } from '../src/database/migrations/1795000000016-StringTokenIds';
import { beforeMigration, MigrationUnderTest } from './support/migrations';

const A = '0a000000-0000-4000-8000-000000000000';
const B = '0b000000-0000-4000-8000-000000000000';
const CONNECTION_A = '0a000000-0000-4000-8000-0000000000e1';
const TRANSACTION_A = '0a000000-0000-4000-8000-0000000000f1';
/** Held by both tenants (allowed since migration 10: ids are unique per tenant). */
const SHARED = '0c000000-0000-4000-8000-0000000000d1';
/** Enough uuids that their order as uuids and as text can be compared. */
const TOKENS_A = [SHARED, ...Array.from({ length: 12 }, () => randomUUID())];
const MIGRATION = new StringTokenIds1795000000016().name;
const TABLES = ['tokens', 'token_search_indexes', 'token_cvcs', 'transactions'];
const CONSTRAINTS = [
  'tokens_pkey',
  'token_search_indexes_pkey',
  'token_cvcs_pkey',
  'transactions_pkey',
  'token_search_indexes_token_id_fkey',
  'token_cvcs_token_id_fkey',
];
const INDEXES = ['tokens_tenant_created_idx', 'tokens_pkey', 'token_search_indexes_pkey', 'token_cvcs_pkey'];

const insertToken = (db: DataSource, tenant: string, id: string, containers = '{/pci/high/}') =>
  db.query(
    `INSERT INTO tokens (id, tenant_id, type, data, fingerprint, fingerprint_expression, containers, created_at)
     VALUES ($1, $2, 'card', '\\xaa', 'f', '{{ data }}', $3, now())`,
    [id, tenant, containers],
  );

async function seed(old: DataSource): Promise<void> {
  await old.query(`INSERT INTO tenants (id, name) VALUES ('${A}', 'a'), ('${B}', 'b')`);
  for (const id of TOKENS_A) await insertToken(old, A, id);
  await insertToken(old, B, SHARED, '{/}');
  await old.query(
    `INSERT INTO token_search_indexes (token_id, tenant_id, digest) VALUES
       ('${SHARED}', '${A}', '\\x01'), ('${SHARED}', '${A}', '\\x02'), ('${SHARED}', '${B}', '\\x01')`,
  );
  await old.query(
    `INSERT INTO token_cvcs (token_id, tenant_id, cvc, expires_at) VALUES
       ('${SHARED}', '${A}', '\\xcc', now() + interval '1 hour')`,
  );
  await old.query(
    `INSERT INTO connections (id, tenant_id, formula_id, method, display_name, fields, accepted_countries,
                              accepted_currencies, active, status, three_d_secure_enabled, created_at, updated_at)
     VALUES ('${CONNECTION_A}', '${A}', 'sandbox', 'card', 'Sandbox', '{}', '{US}', '{USD}', true, 'available',
             false, now(), now())`,
  );
  await old.query(
    `INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, intent, amount, currency,
                               payment_source, merchant_initiated, is_subsequent_payment, payment_method,
                               created_at, updated_at)
     VALUES ('${TRANSACTION_A}', '${A}', '${CONNECTION_A}', '${SHARED}', 'capture_succeeded', 'capture', 1000,
             'USD', 'ecommerce', false, false, '{}', now(), now())`,
  );
}

/** Every row of the tables, in the text form of each (a uuid and the same id as text read alike). */
async function rows(db: DataSource): Promise<Record<string, string[]>> {
  const result: Record<string, string[]> = {};
  for (const table of TABLES) {
    const found: { row: string }[] = await db.query(`SELECT x::text AS row FROM ${table} x ORDER BY x::text`);
    result[table] = found.map((r) => r.row);
  }
  return result;
}

async function columnTypes(db: DataSource): Promise<string[]> {
  const found: { t: string }[] = await db.query(
    `SELECT table_name || '.' || column_name || ' ' || data_type || coalesce('(' || character_maximum_length || ')', '')
              || coalesce(' collate ' || collation_name, '') AS t
       FROM information_schema.columns
      WHERE table_schema = current_schema()
        AND (table_name, column_name) IN (('tokens', 'id'), ('token_search_indexes', 'token_id'),
                                          ('token_cvcs', 'token_id'), ('transactions', 'token_id'))
      ORDER BY 1`,
  );
  return found.map((r) => r.t);
}

async function definitions(db: DataSource): Promise<Record<string, string>> {
  const constraints: { name: string; def: string }[] = await db.query(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = ANY($1)`,
    [CONSTRAINTS],
  );
  const indexes: { name: string; def: string }[] = await db.query(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE indexname = ANY($1)`,
    [INDEXES],
  );
  return Object.fromEntries([
    ...constraints.map((c) => [`constraint ${c.name}`, c.def]),
    ...indexes.map((i) => [`index ${i.name}`, i.def]),
  ]);
}

const idsInOrder = async (db: DataSource): Promise<string[]> =>
  (
    await db.query<{ id: string }[]>(`SELECT id::text AS id FROM tokens WHERE tenant_id = $1 ORDER BY id`, [
      A,
    ])
  ).map((r) => r.id);

/**
 * Migration 16 (docs/tokens.md): every column that holds a token id becomes varchar(400) in byte
 * order; rows, keys and their names stay, the foreign keys onto tokens still cascade, ids are unique per
 * tenant only. down() goes back to uuids while every id is one.
 */
describe(`migration ${MIGRATION}`, () => {
  let migration: MigrationUnderTest;
  let db: DataSource;
  let before: Record<string, string[]>;
  let definitionsBefore: Record<string, string>;
  let uuidOrder: string[];

  beforeAll(async () => {
    migration = await beforeMigration(StringTokenIds1795000000016, 'vault_test_token_ids', seed);
    db = migration.db;
    before = await rows(db);
    definitionsBefore = await definitions(db);
    uuidOrder = await idsInOrder(db);
  });

  afterAll(async () => {
    await migration?.close();
  });

  it('turns every token id column into varchar(400) in byte order, keeping every row', async () => {
    expect(await columnTypes(db)).toEqual([
      'token_cvcs.token_id uuid',
      'token_search_indexes.token_id uuid',
      'tokens.id uuid',
      'transactions.token_id uuid',
    ]);
    expect(await runMigrations(db)).toEqual([MIGRATION]);
    expect(await columnTypes(db)).toEqual([
      'token_cvcs.token_id character varying(400) collate C',
      'token_search_indexes.token_id character varying(400) collate C',
      'tokens.id character varying(400) collate C',
      'transactions.token_id character varying(400) collate C',
    ]);
    expect(await rows(db)).toEqual(before);
    expect(before.tokens).toHaveLength(TOKENS_A.length + 1);
  });

  it('keeps the keys and indexes under their names, on the same columns', async () => {
    const after = await definitions(db);
    expect(Object.keys(after).sort()).toEqual(Object.keys(definitionsBefore).sort());
    expect(Object.keys(after)).toHaveLength(CONSTRAINTS.length + INDEXES.length);
    expect(after).toEqual(definitionsBefore);
  });

  it('existing ids sort as they did as uuids (keyset pages keep their order)', async () => {
    expect(uuidOrder).toHaveLength(TOKENS_A.length);
    expect(await idsInOrder(db)).toEqual(uuidOrder);
  });

  it('takes string ids, unique per tenant, and the foreign keys onto tokens still hold and cascade', async () => {
    const id = `custom_ID-${'x'.repeat(380)}`;
    await insertToken(db, A, id);
    await insertToken(db, B, id);
    await expect(insertToken(db, A, id)).rejects.toThrow(/tokens_pkey/);
    await expect(insertToken(db, A, `${id}${'y'.repeat(20)}`)).rejects.toThrow(/too long/);
    await db.query(
      `INSERT INTO token_search_indexes (token_id, tenant_id, digest) VALUES ($1, $2, '\\x01')`,
      [id, A],
    );
    await db.query(
      `INSERT INTO token_cvcs (token_id, tenant_id, cvc, expires_at) VALUES ($1, $2, '\\xcc', now())`,
      [id, A],
    );
    await expect(
      db.query(
        `INSERT INTO token_cvcs (token_id, tenant_id, cvc, expires_at) VALUES ('nope', $1, '\\x01', now())`,
        [A],
      ),
    ).rejects.toThrow(/token_cvcs_token_id_fkey/);
    await db.query(`DELETE FROM tokens WHERE tenant_id = $1 AND id = $2`, [A, id]);
    const left: { n: number }[] = await db.query(
      `SELECT (SELECT count(*) FROM token_search_indexes WHERE token_id = $1)::int
            + (SELECT count(*) FROM token_cvcs WHERE token_id = $1)::int AS n`,
      [id],
    );
    expect(left[0].n).toBe(0);
    const other: { n: number }[] = await db.query(
      `SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1 AND id = $2`,
      [B, id],
    );
    expect(other[0].n).toBe(1);
  });

  it('down() is refused while an id is not a uuid, then goes back to uuids with every row', async () => {
    await expect(db.undoLastMigration({ transaction: 'all' })).rejects.toThrow(/not a uuid/);
    await db.query(`DELETE FROM tokens WHERE id !~ '^[0-9a-f-]{36}$'`);
    await db.undoLastMigration({ transaction: 'all' });
    expect(await columnTypes(db)).toEqual([
      'token_cvcs.token_id uuid',
      'token_search_indexes.token_id uuid',
      'tokens.id uuid',
      'transactions.token_id uuid',
    ]);
    expect(await rows(db)).toEqual(before);
    expect(await definitions(db)).toEqual(definitionsBefore);
  });
});
