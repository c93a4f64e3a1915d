import { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToBootstrapApplications, revokeFromManagementApplications } from './bootstrap-grants';

const WEBHOOK_PERMISSIONS = ['webhook:create', 'webhook:read', 'webhook:update', 'webhook:delete'];

/**
 * Webhooks: the webhooks themselves (their signing secret sealed with the tenant's
 * key), a transactional outbox of events (written in the transaction of the change they report), and
 * one delivery per event and subscribed webhook, fanned out when the event is recorded. Deliveries are
 * claimed by workers with `FOR UPDATE SKIP LOCKED` and a lease, in `seq` order per webhook and entity.
 * The bootstrap management application of each tenant is granted `webhook:*`.
 */
export class Webhooks1795000000012 implements MigrationInterface {
  name = 'Webhooks1795000000012';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhooks (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid NOT NULL,
        name varchar(200) NOT NULL,
        url varchar(2000) NOT NULL,
        events text[] NOT NULL,
        status varchar(20) NOT NULL CHECK (status IN ('enabled', 'disabled')),
        notify_email varchar(320),
        secret bytea NOT NULL,
        consecutive_failures integer NOT NULL DEFAULT 0,
        created_by uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id)
      )`);
    await q.query(`CREATE INDEX webhooks_tenant_created_idx ON webhooks (tenant_id, created_at, id)`);
    await q.query(`
      CREATE TABLE webhook_events (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid NOT NULL,
        type varchar(60) NOT NULL,
        entity_id varchar(400) NOT NULL,
        data jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, id)
      )`);
    await q.query(`CREATE INDEX webhook_events_created_idx ON webhook_events (created_at)`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        tenant_id uuid NOT NULL,
        id uuid NOT NULL,
        seq bigserial NOT NULL,
        webhook_id uuid NOT NULL,
        event_id uuid NOT NULL,
        event_type varchar(60) NOT NULL,
        entity_id varchar(400) NOT NULL,
        status varchar(20) NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        last_status_code integer,
        next_attempt_at timestamptz NOT NULL,
        leased_until timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, id),
        FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE,
        FOREIGN KEY (tenant_id, event_id) REFERENCES webhook_events (tenant_id, id) ON DELETE CASCADE
      )`);
    // The workers' claim: due pending deliveries, oldest first.
    await q.query(
      `CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`,
    );
    // Ordering per webhook and entity: an earlier pending delivery of the same entity holds the later ones.
    await q.query(
      `CREATE INDEX webhook_deliveries_entity_idx ON webhook_deliveries (tenant_id, webhook_id, entity_id, seq)
        WHERE status = 'pending'`,
    );
    await q.query(
      `CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (tenant_id, webhook_id, created_at, id)`,
    );
    await grantToBootstrapApplications(q, WEBHOOK_PERMISSIONS);
  }

  async down(q: QueryRunner): Promise<void> {
    await revokeFromManagementApplications(q, WEBHOOK_PERMISSIONS);
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhook_events`);
    await q.query(`DROP TABLE webhooks`);
  }
}
