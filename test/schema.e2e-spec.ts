import 'reflect-metadata';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { getMetadataArgsStorage } from 'typeorm';
import type { EntityClass } from '../src/database/data-source';
import { tableOf } from '../src/database/table';

/**
 * Unique indexes that lead with the digest a request brings before its tenant is known, each with why
 * (docs/scaling.md). They must still include tenant_id: Citus keeps a unique index on a distributed table
 * only when it contains the distribution column.
 */
const LOOKUPS_BEFORE_TENANT: Record<string, string> = {
  api_keys_key_hash_key: 'every request finds its API key by digest; api_keys is a reference table on Citus',
  sessions_key_hash_key: 'a request with a session key finds its session by digest',
  transactions_approval_idx: "the buyer's approval link finds its transaction by the token's digest",
  proxies_key_key: 'a request through a pre-configured proxy finds it by the key in BT-PROXY-KEY',
};

interface TenantTable {
  table: string;
  not_null: boolean;
}

interface UniqueIndex {
  table: string;
  index: string;
  primary: boolean;
  columns: string[];
}

interface ForeignKey {
  table: string;
  name: string;
  columns: string[];
  references: string;
  referenced: string[];
}

/**
 * What keeps the schema from being distributed by tenant: for every tenant-scoped table (one with a
 * tenant_id column), a missing primary key, a nullable tenant_id, a primary key or unique index that does
 * not lead with tenant_id (or, for the listed lookups, does not include it), and a foreign key to another
 * tenant-scoped table that does not pair tenant_id with tenant_id.
 */
async function keyProblems(db: Client): Promise<string[]> {
  const tables = (
    await db.query<TenantTable>(
      `SELECT c.relname AS table, a.attnotnull AS not_null
         FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')`,
    )
  ).rows;
  const scoped = new Set(tables.map((t) => t.table));
  const indexes = (
    await db.query<UniqueIndex>(
      `SELECT t.relname AS table, i.relname AS index, x.indisprimary AS primary,
              ARRAY(SELECT coalesce(a.attname::text, '(expression)')
                      FROM generate_series(0, x.indnkeyatts - 1) AS k
                      LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[k]
                     ORDER BY k) AS columns
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
        WHERE x.indisunique AND t.relnamespace = current_schema()::regnamespace`,
    )
  ).rows.filter((ix) => scoped.has(ix.table));
  const foreignKeys = (
    await db.query<ForeignKey>(
      `SELECT t.relname AS table, c.conname AS name, r.relname AS references,
              ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
                      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.n) AS columns,
              ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n)
                      JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.n) AS referenced
         FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid
        WHERE c.contype = 'f' AND t.relnamespace = current_schema()::regnamespace`,
    )
  ).rows.filter((fk) => scoped.has(fk.table) && scoped.has(fk.references));

  const problems: string[] = [];
  for (const t of tables) {
    if (!t.not_null) problems.push(`${t.table}: tenant_id is nullable`);
    if (!indexes.some((ix) => ix.table === t.table && ix.primary))
      problems.push(`${t.table}: no primary key`);
  }
  for (const ix of indexes) {
    const what = `${ix.table}: ${ix.primary ? 'primary key' : 'unique index'} ${ix.index} (${ix.columns.join(', ')})`;
    if (ix.index in LOOKUPS_BEFORE_TENANT) {
      if (!ix.columns.includes('tenant_id')) problems.push(`${what} does not include tenant_id`);
    } else if (ix.columns[0] !== 'tenant_id') problems.push(`${what} does not lead with tenant_id`);
  }
  for (const fk of foreignKeys) {
    const paired = fk.columns.some((column, i) => column === 'tenant_id' && fk.referenced[i] === 'tenant_id');
    if (!paired)
      problems.push(
        `${fk.table}: foreign key ${fk.name} (${fk.columns.join(', ')}) -> ${fk.references} (${fk.referenced.join(', ')}) does not pair tenant_id`,
      );
  }
  return problems.sort();
}

/** Issue 16, item 10: the migrated schema can be distributed by tenant_id (docs/scaling.md). */
describe('schema keys of tenant-scoped tables', () => {
  let db: Client;

  beforeAll(async () => {
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
  });
  afterAll(() => db.end());

  it('every primary key and unique index leads with tenant_id, every foreign key between them carries it', async () => {
    expect(await keyProblems(db)).toEqual([]);
  });

  it('finds the tenant-scoped tables, and every listed exception still exists', async () => {
    const { rows } = await db.query<{ table: string }>(
      `SELECT c.relname AS table FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
        WHERE a.attname = 'tenant_id' AND c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace`,
    );
    expect(rows.map((r) => r.table)).toEqual(
      expect.arrayContaining([
        'tokens',
        'transactions',
        'refunds',
        'connections',
        'audit_logs',
        'applications',
      ]),
    );
    const listed = await db.query<{ index: string }>(
      `SELECT i.relname AS index FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indisunique AND i.relname = ANY($1)`,
      [Object.keys(LOOKUPS_BEFORE_TENANT)],
    );
    expect(listed.rows.map((r) => r.index).sort()).toEqual(Object.keys(LOOKUPS_BEFORE_TENANT).sort());
  });

  it('fails on a key that does not lead with tenant_id and on a foreign key without it', async () => {
    await db.query('BEGIN');
    try {
      await db.query(
        `CREATE TABLE schema_check_parent (tenant_id uuid NOT NULL, id uuid PRIMARY KEY, code text)`,
      );
      await db.query(`CREATE UNIQUE INDEX schema_check_parent_code ON schema_check_parent (code, tenant_id)`);
      await db.query(`
        CREATE TABLE schema_check_child (
          tenant_id uuid, id uuid, parent_id uuid REFERENCES schema_check_parent (id), note text,
          PRIMARY KEY (tenant_id, id))`);
      await db.query(`CREATE TABLE schema_check_loose (tenant_id uuid, id uuid)`);
      expect(await keyProblems(db)).toEqual([
        'schema_check_child: foreign key schema_check_child_parent_id_fkey (parent_id) -> schema_check_parent (id) does not pair tenant_id',
        'schema_check_loose: no primary key',
        'schema_check_loose: tenant_id is nullable',
        'schema_check_parent: primary key schema_check_parent_pkey (id) does not lead with tenant_id',
        'schema_check_parent: unique index schema_check_parent_code (code, tenant_id) does not lead with tenant_id',
      ]);
    } finally {
      await db.query('ROLLBACK');
    }
  });
});

/**
 * Every `*.entity.ts` under src/, loaded, and the entity classes they export. TypeORM's metadata storage is
 * global to the process, so it also holds the classes other test files of the same process loaded: only
 * this file's own classes count.
 */
function loadEntities(dir = join(__dirname, '..', 'src')): EntityClass[] {
  const found: EntityClass[] = [];
  const tables = new Set(getMetadataArgsStorage().tables.map((t) => t.target));
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...loadEntities(path));
    else if (entry.name.endsWith('.entity.ts')) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const exported = Object.values(require(path) as Record<string, unknown>);
      const registered = new Set(getMetadataArgsStorage().tables.map((t) => t.target));
      for (const value of exported)
        if (typeof value === 'function' && (registered.has(value) || tables.has(value)))
          found.push(value as EntityClass);
    }
  }
  return found;
}

/** The udt_name PostgreSQL reports for a type as entities write it (arrays: the element's, prefixed `_`). */
const UDT: Record<string, string> = {
  varchar: 'varchar',
  'character varying': 'varchar',
  char: 'bpchar',
  character: 'bpchar',
  text: 'text',
  uuid: 'uuid',
  bytea: 'bytea',
  jsonb: 'jsonb',
  json: 'json',
  boolean: 'bool',
  integer: 'int4',
  int: 'int4',
  bigint: 'int8',
  timestamptz: 'timestamptz',
};

interface DatabaseColumn {
  table: string;
  column: string;
  udt: string;
  nullable: boolean;
  length: number | null;
}

/** One line per column, as the entity declares it or as the migrated database has it. */
const describeColumn = (c: Omit<DatabaseColumn, 'table'> & { table: string }) =>
  `${c.table}.${c.column} ${c.udt}${c.length ? `(${c.length})` : ''}${c.nullable ? ' null' : ' not null'}`;

/** Each entity is its table's one definition (src/database/table.ts): it must never drift from the migrations. */
describe('entities and the migrated schema', () => {
  let db: Client;

  beforeAll(async () => {
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
  });
  afterAll(() => db.end());

  it('every table has one entity, whose columns have the names, type families and nullability of the table', async () => {
    const entities = loadEntities().map((entity) => tableOf(entity));
    const { rows } = await db.query<DatabaseColumn>(
      `SELECT table_name AS table, column_name AS column, udt_name AS udt, is_nullable = 'YES' AS nullable,
              character_maximum_length AS length
         FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> 'migrations'`,
    );
    const tables = [...new Set(rows.map((r) => r.table))].sort();
    expect(entities.map((e) => e.name).sort()).toEqual(tables);

    const declared = entities.flatMap((table) =>
      table.columns.map((c) =>
        describeColumn({
          table: table.name,
          column: c.name,
          udt: `${c.array ? '_' : ''}${UDT[c.type] ?? `unknown type ${c.type}`}`,
          nullable: c.nullable,
          length: c.length ?? null,
        }),
      ),
    );
    expect(declared.sort()).toEqual(rows.map(describeColumn).sort());
  });

  it('every entity names its primary key as the table does', async () => {
    const { rows } = await db.query<{ table: string; columns: string[] }>(
      `SELECT t.relname AS table,
              ARRAY(SELECT a.attname::text FROM unnest(c.conkey) AS k(attnum)
                      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum) AS columns
         FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
        WHERE c.contype = 'p' AND t.relnamespace = current_schema()::regnamespace AND t.relname <> 'migrations'`,
    );
    const keys = (table: string, columns: string[]) => `${table} (${[...columns].sort().join(', ')})`;
    const declared = loadEntities()
      .map((entity) => tableOf(entity))
      .map((t) =>
        keys(
          t.name,
          t.columns.filter((c) => c.primary).map((c) => c.name),
        ),
      );
    expect(declared.sort()).toEqual(rows.map((r) => keys(r.table, r.columns)).sort());
  });
});
