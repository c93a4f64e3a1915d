import { MigrationInterface, QueryRunner } from 'typeorm';

/** A primary key before and after: every tenant-scoped table's leads with `tenant_id`. */
interface PrimaryKey {
  table: string;
  before: string;
  after: string;
}

/** A foreign key between two tenant-scoped tables, before and after it carries `tenant_id` on both sides. */
interface ForeignKey {
  table: string;
  name: string;
  before: string;
  after: string;
  references: string;
  onDelete: 'CASCADE' | 'NO ACTION';
}

/** A unique index, before and after it includes `tenant_id`; same name both ways. */
interface UniqueIndex {
  table: string;
  name: string;
  before: string;
  after: string;
}

const PRIMARY_KEYS: PrimaryKey[] = [
  { table: 'applications', before: 'id', after: 'tenant_id, id' },
  { table: 'api_keys', before: 'id', after: 'tenant_id, id' },
  { table: 'sessions', before: 'id', after: 'tenant_id, id' },
  { table: 'tokens', before: 'id', after: 'tenant_id, id' },
  { table: 'token_search_indexes', before: 'token_id, digest', after: 'tenant_id, token_id, digest' },
  { table: 'token_cvcs', before: 'token_id', after: 'tenant_id, token_id' },
  { table: 'audit_logs', before: 'id', after: 'tenant_id, id' },
  { table: 'connections', before: 'id', after: 'tenant_id, id' },
  { table: 'transactions', before: 'id', after: 'tenant_id, id' },
  { table: 'refunds', before: 'id', after: 'tenant_id, id' },
];

// Every foreign key that points at one of the primary keys above (they depend on its index).
const FOREIGN_KEYS: ForeignKey[] = [
  {
    table: 'api_keys',
    name: 'api_keys_application_id_fkey',
    before: 'application_id',
    after: 'tenant_id, application_id',
    references: 'applications',
    onDelete: 'CASCADE',
  },
  {
    table: 'sessions',
    name: 'sessions_application_id_fkey',
    before: 'application_id',
    after: 'tenant_id, application_id',
    references: 'applications',
    onDelete: 'CASCADE',
  },
  {
    // MATCH SIMPLE: a session not yet authorized (authorized_by null) is not checked.
    table: 'sessions',
    name: 'sessions_authorized_by_fkey',
    before: 'authorized_by',
    after: 'tenant_id, authorized_by',
    references: 'applications',
    onDelete: 'CASCADE',
  },
  {
    table: 'token_search_indexes',
    name: 'token_search_indexes_token_id_fkey',
    before: 'token_id',
    after: 'tenant_id, token_id',
    references: 'tokens',
    onDelete: 'CASCADE',
  },
  {
    table: 'token_cvcs',
    name: 'token_cvcs_token_id_fkey',
    before: 'token_id',
    after: 'tenant_id, token_id',
    references: 'tokens',
    onDelete: 'CASCADE',
  },
  {
    table: 'transactions',
    name: 'transactions_connection_id_fkey',
    before: 'connection_id',
    after: 'tenant_id, connection_id',
    references: 'connections',
    onDelete: 'NO ACTION',
  },
  {
    table: 'refunds',
    name: 'refunds_transaction_id_fkey',
    before: 'transaction_id',
    after: 'tenant_id, transaction_id',
    references: 'transactions',
    onDelete: 'NO ACTION',
  },
];

// Lookups made before the tenant is known (a key, a session key, an approval link) keep their hash first
// so that they stay one index probe; `tenant_id` second is what lets a distributed table keep them unique.
const UNIQUE_INDEXES: UniqueIndex[] = [
  { table: 'api_keys', name: 'api_keys_key_hash_key', before: 'key_hash', after: 'key_hash, tenant_id' },
  { table: 'sessions', name: 'sessions_key_hash_key', before: 'key_hash', after: 'key_hash, tenant_id' },
  {
    table: 'sessions',
    name: 'sessions_nonce_hash_key',
    before: 'nonce_hash',
    after: 'tenant_id, nonce_hash',
  },
  {
    table: 'transactions',
    name: 'transactions_approval_idx',
    before: 'approval_token_hash',
    after: 'approval_token_hash, tenant_id',
  },
];

/**
 * Keys a database distributed by tenant (Citus) can keep: the primary key and every unique index of a
 * tenant-scoped table include `tenant_id`, and every foreign key between two tenant-scoped tables carries
 * it on both sides, so a tenant's rows and their references can live on one shard. Only constraints and
 * indexes change; rows stay where they are. Each new index is built under the table's lock, in the one
 * transaction that runs pending migrations: on large tables that is a pause at start-up (docs/scaling.md).
 */
export class TenantScopedKeys1795000000010 implements MigrationInterface {
  name = 'TenantScopedKeys1795000000010';

  async up(q: QueryRunner): Promise<void> {
    // A session authorized by an application of another tenant cannot have a composite foreign key; the
    // session key resolver already ignores such an authorizer (it joins on the session's tenant), so
    // these sessions answer 401 today and go, as migration 9 removed those whose authorizer was gone.
    await q.query(`
      DELETE FROM sessions s
       WHERE s.authorized_by IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM applications a WHERE a.tenant_id = s.tenant_id AND a.id = s.authorized_by)`);
    for (const fk of FOREIGN_KEYS) await q.query(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${fk.name}`);
    for (const pk of PRIMARY_KEYS) await replacePrimaryKey(q, pk.table, pk.after);
    for (const index of UNIQUE_INDEXES) await replaceUniqueIndex(q, index, index.after);
    for (const fk of FOREIGN_KEYS) await addForeignKey(q, fk, fk.after, `tenant_id, id`);
  }

  /** Back to keys on `id` alone; fails if two tenants have come to share an id (now allowed). */
  async down(q: QueryRunner): Promise<void> {
    for (const fk of FOREIGN_KEYS) await q.query(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${fk.name}`);
    for (const index of UNIQUE_INDEXES) await replaceUniqueIndex(q, index, index.before);
    for (const pk of PRIMARY_KEYS) await replacePrimaryKey(q, pk.table, pk.before);
    for (const fk of FOREIGN_KEYS) await addForeignKey(q, fk, fk.before, 'id');
  }
}

async function replacePrimaryKey(q: QueryRunner, table: string, columns: string): Promise<void> {
  await q.query(
    `ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey, ADD CONSTRAINT ${table}_pkey PRIMARY KEY (${columns})`,
  );
}

async function replaceUniqueIndex(q: QueryRunner, index: UniqueIndex, columns: string): Promise<void> {
  await q.query(`DROP INDEX ${index.name}`);
  await q.query(`CREATE UNIQUE INDEX ${index.name} ON ${index.table} (${columns})`);
}

async function addForeignKey(
  q: QueryRunner,
  fk: ForeignKey,
  columns: string,
  referenced: string,
): Promise<void> {
  await q.query(
    `ALTER TABLE ${fk.table} ADD CONSTRAINT ${fk.name} FOREIGN KEY (${columns})
       REFERENCES ${fk.references} (${referenced}) ON DELETE ${fk.onDelete}`,
  );
}
