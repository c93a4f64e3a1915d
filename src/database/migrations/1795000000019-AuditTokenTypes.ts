import { MigrationInterface, QueryRunner } from 'typeorm';

const appendOnly = (columns: string) => `
  CREATE OR REPLACE FUNCTION audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF OLD.seq IS NULL AND NEW.seq IS NOT NULL
       AND (${columns.replace(/(\w+)/g, 'NEW.$1')}) IS NOT DISTINCT FROM (${columns.replace(/(\w+)/g, 'OLD.$1')})
    THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_logs rows cannot be updated';
  END $$`;
const COLUMNS = 'id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at';

/**
 * Log entity types `card` and `bank`: rows of tokens carry `token`, and now the
 * token's type in `token_type`, so that the filters select them (deleted tokens' rows too). The
 * append-only trigger covers the new column (sealing may set `seq` and the hashes only), and the chain
 * hash covers it when set (rows written before keep their hash).
 */
export class AuditTokenTypes1795000000019 implements MigrationInterface {
  name = 'AuditTokenTypes1795000000019';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE audit_logs ADD COLUMN token_type varchar(10)`);
    await q.query(appendOnly(`${COLUMNS}, token_type`));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(appendOnly(COLUMNS));
    await q.query(`ALTER TABLE audit_logs DROP COLUMN token_type`);
  }
}
