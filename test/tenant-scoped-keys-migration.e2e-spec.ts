import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/load-config';
import { dataSourceOptions, runMigrations } from '../src/database/data-source';
import { MIGRATIONS } from '../src/database/migrations';
import { TenantScopedKeys1795000000010 } from '../src/database/migrations/1795000000010-TenantScopedKeys';
import { createDatabase, dropDatabase } from './support/test-database';

const A = '0a000000-0000-4000-8000-000000000000';
const B = '0b000000-0000-4000-8000-000000000000';
const APP_A = '0a000000-0000-4000-8000-0000000000a1';
const APP_A2 = '0a000000-0000-4000-8000-0000000000a2';
const APP_B = '0b000000-0000-4000-8000-0000000000b1';
const SESSION_OK = '0a000000-0000-4000-8000-0000000000c1';
const SESSION_UNAUTHORIZED = '0a000000-0000-4000-8000-0000000000c2';
const SESSION_CROSS = '0a000000-0000-4000-8000-0000000000c3';
const TOKEN_A = '0a000000-0000-4000-8000-0000000000d1';
const TOKEN_B = '0b000000-0000-4000-8000-0000000000d1';
const CONNECTION_A = '0a000000-0000-4000-8000-0000000000e1';
const TRANSACTION_A = '0a000000-0000-4000-8000-0000000000f1';
const MIGRATION = new TenantScopedKeys1795000000010().name;

/** Rows of every table as the migrations before this one left them, written through SQL. */
const SEED = [
  `INSERT INTO tenants (id, name) VALUES ('${A}', 'a'), ('${B}', 'b')`,
  `INSERT INTO applications (id, tenant_id, name, type, permissions) VALUES
     ('${APP_A}', '${A}', 'mgt', 'management', '{application:create}'),
     ('${APP_A2}', '${A}', 'private', 'private', '{token:read}'),
     ('${APP_B}', '${B}', 'private', 'private', '{token:read}')`,
  `INSERT INTO api_keys (id, tenant_id, application_id, key_hash)
   SELECT gen_random_uuid(), a.tenant_id, a.id, sha256(a.id::text::bytea) FROM applications a`,
  `INSERT INTO sessions (id, tenant_id, application_id, key_hash, nonce_hash, authorized_by, authorized_at, expires_at, created_at)
   VALUES ('${SESSION_OK}', '${A}', '${APP_A}', '\\x01', NULL, '${APP_A2}', now(), now() + interval '1 hour', now()),
          ('${SESSION_UNAUTHORIZED}', '${A}', '${APP_A}', '\\x02', '\\x12', NULL, NULL, now() + interval '1 hour', now()),
          ('${SESSION_CROSS}', '${A}', '${APP_A}', '\\x03', NULL, '${APP_B}', now(), now() + interval '1 hour', now())`,
  `INSERT INTO tokens (id, tenant_id, type, data, fingerprint, fingerprint_expression, containers, created_at) VALUES
     ('${TOKEN_A}', '${A}', 'card', '\\xaa', 'fa', '{{ data }}', '{/pci/}', now()),
     ('${TOKEN_B}', '${B}', 'token', '\\xbb', 'fb', '{{ data }}', '{/}', now())`,
  `INSERT INTO token_search_indexes (token_id, tenant_id, digest) VALUES
     ('${TOKEN_A}', '${A}', '\\x01'), ('${TOKEN_A}', '${A}', '\\x02'), ('${TOKEN_B}', '${B}', '\\x01')`,
  `INSERT INTO token_cvcs (token_id, tenant_id, cvc, expires_at) VALUES ('${TOKEN_A}', '${A}', '\\xcc', now() + interval '1 hour')`,
  `INSERT INTO audit_logs (id, tenant_id, actor_type, entity_type, entity_id, operation, message, created_at, seq, prev_hash, hash)
   SELECT gen_random_uuid(), '${A}', 'application', 'token', '${TOKEN_A}', 'read', 'Token read ' || i,
          now() - i * interval '1 minute', CASE WHEN i > 2 THEN i END, CASE WHEN i > 2 THEN '\\x00'::bytea END,
          CASE WHEN i > 2 THEN sha256(i::text::bytea) END
     FROM generate_series(1, 5) AS i`,
  `INSERT INTO audit_chain_heads (tenant_id, seq, hash) VALUES ('${A}', 5, sha256('5'::bytea))`,
  `INSERT INTO idempotency_records (tenant_id, scope, key_digest, request_digest, claim_id, state, claimed_until, created_at, expires_at)
   VALUES ('${A}', 'app', '\\x01', '\\x02', gen_random_uuid(), 'completed', now(), now(), now() + interval '1 day')`,
  `INSERT INTO connections (id, tenant_id, formula_id, method, display_name, fields, accepted_countries, accepted_currencies,
                            active, status, three_d_secure_enabled, created_at, updated_at)
   VALUES ('${CONNECTION_A}', '${A}', 'sandbox', 'card', 'Sandbox', '{}', '{US}', '{USD}', true, 'available', false, now(), now())`,
  `INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, intent, amount, currency, payment_source,
                             merchant_initiated, is_subsequent_payment, payment_method, approval_token_hash, created_at, updated_at)
   VALUES ('${TRANSACTION_A}', '${A}', '${CONNECTION_A}', '${TOKEN_A}', 'capture_succeeded', 'capture', 1000, 'USD', 'ecommerce',
           false, false, '{}', '\\x0f', now(), now())`,
  `INSERT INTO refunds (id, tenant_id, transaction_id, amount, currency, status, created_at, updated_at)
   VALUES (gen_random_uuid(), '${A}', '${TRANSACTION_A}', 100, 'USD', 'succeeded', now(), now()),
          (gen_random_uuid(), '${A}', '${TRANSACTION_A}', 200, 'USD', 'processing', now(), now())`,
  `INSERT INTO rate_limits (key, window_start, hits) VALUES ('k', date_trunc('minute', now()), 3)`,
  `INSERT INTO job_runs (job, tick_start, instance_id, ran_at) VALUES ('j', now(), gen_random_uuid(), now())`,
  `INSERT INTO master_key_checks (version, check_value, created_at) VALUES ('v1', '\\x01', now())`,
];

const TABLES = [
  'tenants',
  'applications',
  'api_keys',
  'sessions',
  'tokens',
  'token_search_indexes',
  'token_cvcs',
  'audit_logs',
  'audit_chain_heads',
  'idempotency_records',
  'connections',
  'transactions',
  'refunds',
  'rate_limits',
  'job_runs',
  'master_key_checks',
];

/** Every table's rows, as a count and a digest of their text forms in order. */
async function snapshot(db: DataSource): Promise<Record<string, { n: number; digest: string }>> {
  const result: Record<string, { n: number; digest: string }> = {};
  for (const table of TABLES) {
    const [row]: { n: number; digest: string }[] = await db.query(
      `SELECT count(*)::int AS n, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS digest
         FROM ${table} x`,
    );
    result[table] = row;
  }
  return result;
}

async function definition(db: DataSource, constraint: string): Promise<string> {
  const [row]: { def: string }[] = await db.query(
    'SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = $1',
    [constraint],
  );
  return row.def;
}

async function indexColumns(db: DataSource, index: string): Promise<string> {
  const [row]: { def: string }[] = await db.query(
    'SELECT indexdef AS def FROM pg_indexes WHERE indexname = $1',
    [index],
  );
  return /\((.*)\)$/.exec(row.def)![1];
}

/** Migration 10 on a database that already holds rows: keys change, rows stay. */
describe(`migration ${MIGRATION} on existing data`, () => {
  let name: string;
  let db: DataSource;
  let before: Record<string, { n: number; digest: string }>;
  let config: ReturnType<typeof loadConfig>;
  const upTo = MIGRATIONS.indexOf(TenantScopedKeys1795000000010);

  beforeAll(async () => {
    const created = await createDatabase('vault_test_keys');
    name = created.name;
    config = loadConfig({ DATABASE_URL: created.url });
    const old = new DataSource({ ...dataSourceOptions(config), migrations: MIGRATIONS.slice(0, upTo) });
    await old.initialize();
    try {
      await runMigrations(old);
      for (const sql of SEED) await old.query(sql);
      before = await snapshot(old);
    } finally {
      await old.destroy();
    }
    // Up to this migration only: later ones may change rows on purpose (tested on their own).
    db = new DataSource({ ...dataSourceOptions(config), migrations: MIGRATIONS.slice(0, upTo + 1) });
    await db.initialize();
  });

  afterAll(async () => {
    await db?.destroy();
    if (name) await dropDatabase(name);
  });

  it('applies on top of the earlier migrations and keeps every row', async () => {
    expect(await runMigrations(db)).toEqual([MIGRATION]);
    const after = await snapshot(db);
    const { sessions: sessionsBefore, ...restBefore } = before;
    const { sessions: sessionsAfter, ...restAfter } = after;
    expect(restAfter).toEqual(restBefore);
    // The one session authorized by another tenant's application (answered 401 already) is gone.
    expect(sessionsBefore.n).toBe(3);
    const sessions: { id: string }[] = await db.query('SELECT id FROM sessions ORDER BY id');
    expect(sessions.map((s) => s.id)).toEqual([SESSION_OK, SESSION_UNAUTHORIZED]);
    expect(sessionsAfter.n).toBe(2);
  });

  it('keys lead with tenant_id and foreign keys carry it', async () => {
    for (const table of [
      'applications',
      'api_keys',
      'sessions',
      'tokens',
      'audit_logs',
      'connections',
      'transactions',
      'refunds',
    ])
      expect(await definition(db, `${table}_pkey`)).toBe('PRIMARY KEY (tenant_id, id)');
    expect(await definition(db, 'token_search_indexes_pkey')).toBe(
      'PRIMARY KEY (tenant_id, token_id, digest)',
    );
    expect(await definition(db, 'token_cvcs_pkey')).toBe('PRIMARY KEY (tenant_id, token_id)');
    expect(await definition(db, 'refunds_transaction_id_fkey')).toBe(
      'FOREIGN KEY (tenant_id, transaction_id) REFERENCES transactions(tenant_id, id)',
    );
    expect(await definition(db, 'sessions_authorized_by_fkey')).toBe(
      'FOREIGN KEY (tenant_id, authorized_by) REFERENCES applications(tenant_id, id) ON DELETE CASCADE',
    );
    expect(await indexColumns(db, 'api_keys_key_hash_key')).toBe('key_hash, tenant_id');
    expect(await indexColumns(db, 'sessions_nonce_hash_key')).toBe('tenant_id, nonce_hash');
    expect(await indexColumns(db, 'transactions_approval_idx')).toBe('approval_token_hash, tenant_id');
  });

  it('the foreign keys still cascade, and refuse a reference into another tenant', async () => {
    await expect(
      db.query(
        `INSERT INTO refunds (id, tenant_id, transaction_id, amount, currency, status, created_at, updated_at)
         VALUES (gen_random_uuid(), '${B}', '${TRANSACTION_A}', 1, 'USD', 'processing', now(), now())`,
      ),
    ).rejects.toMatchObject({ code: '23503' });
    await db.query('DELETE FROM tokens WHERE tenant_id = $1 AND id = $2', [A, TOKEN_A]);
    const [left]: { indexes: number; cvcs: number }[] = await db.query(
      `SELECT (SELECT count(*)::int FROM token_search_indexes WHERE tenant_id = $1) AS indexes,
              (SELECT count(*)::int FROM token_cvcs WHERE tenant_id = $1) AS cvcs`,
      [A],
    );
    expect(left).toEqual({ indexes: 0, cvcs: 0 });
    await db.query('DELETE FROM applications WHERE tenant_id = $1 AND id = $2', [A, APP_A2]);
    const sessions: { id: string }[] = await db.query('SELECT id FROM sessions ORDER BY id');
    expect(sessions.map((s) => s.id)).toEqual([SESSION_UNAUTHORIZED]);
    const [{ keys }]: { keys: number }[] = await db.query(
      'SELECT count(*)::int AS keys FROM api_keys WHERE application_id = $1',
      [APP_A2],
    );
    expect(keys).toBe(0);
  });

  it('down() restores the keys on id alone, keeping the rows', async () => {
    const last = async (): Promise<string> => {
      const [row]: { name: string }[] = await db.query(
        'SELECT name FROM migrations ORDER BY id DESC LIMIT 1',
      );
      return row.name;
    };
    while ((await last()) !== MIGRATION) await db.undoLastMigration({ transaction: 'all' });
    const rows = await snapshot(db);
    await db.undoLastMigration({ transaction: 'all' });
    expect(await snapshot(db)).toEqual(rows);
    expect(await definition(db, 'tokens_pkey')).toBe('PRIMARY KEY (id)');
    expect(await definition(db, 'token_search_indexes_pkey')).toBe('PRIMARY KEY (token_id, digest)');
    expect(await definition(db, 'refunds_transaction_id_fkey')).toBe(
      'FOREIGN KEY (transaction_id) REFERENCES transactions(id)',
    );
    expect(await indexColumns(db, 'api_keys_key_hash_key')).toBe('key_hash');
  });
});
