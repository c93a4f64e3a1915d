import { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToBootstrapApplications, revokeFromManagementApplications } from './bootstrap-grants';

const PERMISSIONS = ['orchestration:relay'];

/**
 * Relay refunds (`relay_refunds`): refunds of payments made at a vendor before the migration, named by
 * the vendor's payment id, through one of the tenant's connections (docs/payments.md, "Relay refunds").
 * The row is written `processing` before the vendor is called, as a transaction's refund is; the
 * settlement job finds those left so by their `updated_at`, and a vendor's notification by the id alone
 * (its merchant reference carries no tenant), hence the two indexes besides the tenant's list.
 * `orchestration:relay` goes to the bootstrap management application, as every management permission.
 */
export class RelayRefunds1795000000040 implements MigrationInterface {
  name = 'RelayRefunds1795000000040';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE relay_refunds (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid NOT NULL,
        connection_id uuid NOT NULL,
        vendor_payment_id varchar(100) NOT NULL,
        amount bigint NOT NULL CHECK (amount > 0),
        currency char(3) NOT NULL,
        reason varchar(200),
        status varchar(20) NOT NULL CHECK (status IN ('processing', 'succeeded', 'failed')),
        vendor_refund_id varchar(100),
        error_code varchar(100),
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, id)
      )`);
    await q.query(
      `CREATE INDEX relay_refunds_created_idx ON relay_refunds (tenant_id, created_at DESC, id DESC)`,
    );
    await q.query(
      `CREATE INDEX relay_refunds_processing_idx ON relay_refunds (updated_at) WHERE status = 'processing'`,
    );
    await q.query(`CREATE INDEX relay_refunds_id_idx ON relay_refunds (id)`);
    await grantToBootstrapApplications(q, PERMISSIONS);
  }

  async down(q: QueryRunner): Promise<void> {
    await revokeFromManagementApplications(q, PERMISSIONS);
    await q.query(`DROP TABLE relay_refunds`);
  }
}
