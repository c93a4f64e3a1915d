import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tamper evidence for the audit log: each tenant's rows are sealed, shortly after they commit, into a
 * hash chain (`seq`, `prev_hash`, `hash`); `audit_chain_heads` keeps the end of each chain. Sealing is
 * the only update a row ever gets, and only once: the trigger refuses any other change.
 */
export class AuditChain1795000000006 implements MigrationInterface {
  name = 'AuditChain1795000000006';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE audit_logs ADD COLUMN seq bigint, ADD COLUMN prev_hash bytea, ADD COLUMN hash bytea`,
    );
    await q.query(
      `CREATE UNIQUE INDEX audit_logs_chain_idx ON audit_logs (tenant_id, seq) WHERE seq IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX audit_logs_unsealed_idx ON audit_logs (tenant_id, created_at, id) WHERE seq IS NULL`,
    );
    await q.query(`
      CREATE TABLE audit_chain_heads (
        tenant_id uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        hash bytea NOT NULL
      )`);
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.seq IS NULL AND NEW.seq IS NOT NULL
           AND (NEW.id, NEW.tenant_id, NEW.actor_id, NEW.actor_type, NEW.entity_type, NEW.entity_id, NEW.operation,
                NEW.message, NEW.created_at)
               IS NOT DISTINCT FROM
               (OLD.id, OLD.tenant_id, OLD.actor_id, OLD.actor_type, OLD.entity_type, OLD.entity_id, OLD.operation,
                OLD.message, OLD.created_at)
        THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit_logs rows cannot be updated';
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_chain_heads`);
    await q.query(`DROP INDEX audit_logs_unsealed_idx`);
    await q.query(`DROP INDEX audit_logs_chain_idx`);
    await q.query(`ALTER TABLE audit_logs DROP COLUMN seq, DROP COLUMN prev_hash, DROP COLUMN hash`);
  }
}
