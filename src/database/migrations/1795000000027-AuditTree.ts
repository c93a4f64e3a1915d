import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each tenant's audit log becomes a Merkle tree with signed checkpoints (docs/audit-verification.md).
 *
 * - Rows are written once and never updated: they get their place in the leaf order when they are
 *   inserted, as `(written, pos)`: the inserting transaction's id and a global sequence. Every row not yet
 *   in the tree has a transaction id at or above the oldest one still running, so the rows below that
 *   horizon never gain a neighbour and can be appended in order, without a lock on the write path.
 * - The chain's sealing UPDATE is gone (the trigger refuses every UPDATE again); the rows sealed before
 *   keep their `seq` and hashes, are verified as before and are the first leaves, in chain order.
 * - `audit_tree_tiles` keeps the tree's hashes (tiles of 256 hashes, as transparency logs store them), so
 *   that proofs are cheap at any size and survive retention; `audit_leaves` maps a row to its leaf index;
 *   `audit_trees` keeps each tree's size, its first retained leaf and its last checkpoint;
 *   `audit_tree_cursor` the last row appended; `audit_checkpoints` the signed notes;
 *   `audit_signing_keys` the Ed25519 keys (a generated one sealed under the master key).
 * - Indexes: the unsealed-rows index and the BRIN index (retention now cuts the leaf order's prefix) are
 *   dropped; `(written, pos)` serves the checkpointer and retention.
 */
export class AuditTree1795000000027 implements MigrationInterface {
  name = 'AuditTree1795000000027';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE audit_logs ADD COLUMN written bigint, ADD COLUMN pos bigint`);
    await q.query(`CREATE SEQUENCE audit_logs_pos_seq AS bigint OWNED BY audit_logs.pos`);
    // Rows written before: sealed ones first in chain order, then the rest as the chain would have taken
    // them; all with transaction id 0, below every later one.
    await q.query(`ALTER TABLE audit_logs DISABLE TRIGGER audit_logs_no_update`);
    await q.query(`
      UPDATE audit_logs AS a SET written = 0, pos = o.n
        FROM (SELECT tenant_id, id, nextval('audit_logs_pos_seq') AS n
                FROM (SELECT tenant_id, id FROM audit_logs
                       ORDER BY tenant_id, seq IS NULL, seq, created_at, id) AS ordered) AS o
       WHERE a.tenant_id = o.tenant_id AND a.id = o.id`);
    await q.query(`ALTER TABLE audit_logs ENABLE TRIGGER audit_logs_no_update`);
    await q.query(`
      ALTER TABLE audit_logs
        ALTER COLUMN written SET DEFAULT pg_current_xact_id()::text::bigint,
        ALTER COLUMN written SET NOT NULL,
        ALTER COLUMN pos SET DEFAULT nextval('audit_logs_pos_seq'),
        ALTER COLUMN pos SET NOT NULL`);
    await q.query(`CREATE INDEX audit_logs_written_pos_idx ON audit_logs (written, pos)`);
    await q.query(`DROP INDEX audit_logs_unsealed_idx`);
    await q.query(`DROP INDEX audit_logs_created_brin`);
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit_logs rows cannot be updated';
      END $$`);

    await q.query(`
      CREATE TABLE audit_trees (
        tenant_id uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
        size bigint NOT NULL DEFAULT 0,
        retained_from bigint NOT NULL DEFAULT 0,
        checkpoint_size bigint NOT NULL DEFAULT 0,
        checkpoint_at timestamptz
      )`);
    await q.query(`
      CREATE TABLE audit_tree_tiles (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        level integer NOT NULL,
        idx bigint NOT NULL,
        hashes bytea NOT NULL,
        PRIMARY KEY (tenant_id, level, idx)
      )`);
    await q.query(`
      CREATE TABLE audit_leaves (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        row_id uuid NOT NULL,
        leaf_index bigint NOT NULL,
        PRIMARY KEY (tenant_id, row_id)
      )`);
    await q.query(`
      CREATE TABLE audit_tree_cursor (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        written bigint NOT NULL,
        pos bigint NOT NULL
      )`);
    await q.query(`INSERT INTO audit_tree_cursor (one, written, pos) VALUES (true, -1, -1)`);
    await q.query(`
      CREATE TABLE audit_checkpoints (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        tree_size bigint NOT NULL,
        root_hash bytea NOT NULL,
        key_id varchar(8) NOT NULL,
        note text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, tree_size)
      )`);
    await q.query(`
      CREATE TABLE audit_signing_keys (
        id uuid PRIMARY KEY,
        name varchar(300) NOT NULL,
        key_id varchar(8) NOT NULL,
        public_key bytea NOT NULL,
        sealed_seed bytea,
        master_key_version varchar(20),
        created_at timestamptz NOT NULL,
        UNIQUE (name, public_key)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'audit_signing_keys',
      'audit_checkpoints',
      'audit_tree_cursor',
      'audit_leaves',
      'audit_tree_tiles',
      'audit_trees',
    ])
      await q.query(`DROP TABLE ${table}`);
    await q.query(`DROP INDEX audit_logs_written_pos_idx`);
    await q.query(`ALTER TABLE audit_logs DROP COLUMN written, DROP COLUMN pos`);
    // The trigger as migration 19 left it: sealing may set the chain's columns once.
    const columns =
      'id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at, token_type';
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.seq IS NULL AND NEW.seq IS NOT NULL
           AND (${columns.replace(/(\w+)/g, 'NEW.$1')}) IS NOT DISTINCT FROM (${columns.replace(/(\w+)/g, 'OLD.$1')})
        THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit_logs rows cannot be updated';
      END $$`);
    await q.query(`CREATE INDEX audit_logs_created_brin ON audit_logs USING brin (created_at)`);
    await q.query(
      `CREATE INDEX audit_logs_unsealed_idx ON audit_logs (tenant_id, created_at, id) WHERE seq IS NULL`,
    );
  }
}
