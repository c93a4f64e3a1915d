import { MigrationInterface, QueryRunner } from 'typeorm';

export class AuditLogs1795000000003 implements MigrationInterface {
  name = 'AuditLogs1795000000003';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_logs (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        actor_id uuid,
        actor_type varchar(20) NOT NULL,
        entity_type varchar(40) NOT NULL,
        entity_id text,
        operation varchar(20) NOT NULL,
        message text NOT NULL,
        created_at timestamptz NOT NULL
      )`);
    // Keyset pagination newest first, unfiltered and by entity type or entity id: each page is an index
    // range scan of `size + 1` entries whatever the table's size.
    await q.query(`CREATE INDEX audit_logs_tenant_created_idx ON audit_logs (tenant_id, created_at, id)`);
    await q.query(
      `CREATE INDEX audit_logs_tenant_type_created_idx ON audit_logs (tenant_id, entity_type, created_at, id)`,
    );
    await q.query(
      `CREATE INDEX audit_logs_tenant_entity_created_idx ON audit_logs (tenant_id, entity_id, created_at, id)`,
    );
    // Retention deletes by age: a BRIN index suits an append-only table in time order, stays tiny, and
    // cannot serve ordered scans, so it never competes with the page indexes above.
    await q.query(`CREATE INDEX audit_logs_created_brin ON audit_logs USING brin (created_at)`);
    // Append-only: rows are inserted and, past retention, deleted; never changed.
    await q.query(`
      CREATE FUNCTION audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit_logs rows cannot be updated';
      END $$`);
    await q.query(`
      CREATE TRIGGER audit_logs_no_update BEFORE UPDATE ON audit_logs
        FOR EACH ROW EXECUTE FUNCTION audit_logs_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_logs`);
    await q.query(`DROP FUNCTION audit_logs_append_only()`);
  }
}
