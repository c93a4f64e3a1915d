import { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToBootstrapApplications, revokeFromManagementApplications } from './bootstrap-grants';

const PERMISSIONS = ['orchestration:flows:read', 'orchestration:flows:update'];

/**
 * Routing rules (`flow_rules`): which connections a transaction without `connection_id` tries, and which
 * transactions are declined before any vendor is called. Positions are 1..n per tenant, flow and action;
 * their unique key is checked at commit, so that moving a rule renumbers the others in one transaction.
 * A change of the rules is announced on `vault_changes`, as keys' are: instances keep the rules in memory.
 * A transaction declined by a rule has no connection: `transactions.connection_id` becomes nullable.
 */
export class FlowRules1795000000029 implements MigrationInterface {
  name = 'FlowRules1795000000029';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE flow_rules (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid NOT NULL,
        flow varchar(40) NOT NULL,
        action varchar(40) NOT NULL,
        description varchar(200) NOT NULL,
        position int NOT NULL CHECK (position >= 1),
        conditions jsonb NOT NULL,
        outcome jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, id),
        CONSTRAINT flow_rules_position_key UNIQUE (tenant_id, flow, action, position) DEFERRABLE INITIALLY DEFERRED
      )`);
    // Instances keep each tenant's rules in memory: every change announces itself (migration 20's function).
    await q.query(`
      CREATE TRIGGER flow_rules_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON flow_rules
        FOR EACH STATEMENT EXECUTE FUNCTION notify_changes()`);
    await q.query(`ALTER TABLE transactions ALTER COLUMN connection_id DROP NOT NULL`);
    await grantToBootstrapApplications(q, PERMISSIONS);
  }

  async down(q: QueryRunner): Promise<void> {
    await revokeFromManagementApplications(q, PERMISSIONS);
    await q.query(`DELETE FROM transactions WHERE connection_id IS NULL`);
    await q.query(`ALTER TABLE transactions ALTER COLUMN connection_id SET NOT NULL`);
    await q.query(`DROP TABLE flow_rules`);
  }
}
