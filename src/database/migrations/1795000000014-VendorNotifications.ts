import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Vendor notifications and redirects. A vendor's notification names a transaction
 * by its reconciliation id only (no tenant): `transactions_id_idx` finds it by id across tenants, as the
 * approval link's index does for the approval page. `vendor_action` keeps, sealed with the tenant's key,
 * the 3-D Secure page a vendor that gives no way to ask for it later (Adyen) sent the buyer to.
 */
export class VendorNotifications1795000000014 implements MigrationInterface {
  name = 'VendorNotifications1795000000014';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE transactions ADD COLUMN vendor_action bytea`);
    await q.query(`CREATE INDEX transactions_id_idx ON transactions (id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX transactions_id_idx`);
    await q.query(`ALTER TABLE transactions DROP COLUMN vendor_action`);
  }
}
