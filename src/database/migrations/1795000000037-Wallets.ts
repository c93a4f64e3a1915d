import { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToBootstrapApplications, revokeFromManagementApplications } from './bootstrap-grants';

const PERMISSIONS = ['wallet:manage'];

/**
 * Wallets (docs/wallets.md): the tenants' Apple Pay and Google Pay merchant keys (the private half sealed
 * under the tenant's key), at most 5 active per tenant and wallet (`slot`, unique), and the transaction
 * ids of the payloads made into tokens (`wallet_replays`, a keyed digest, kept until the payload could no
 * longer be accepted anyway), which refuse a replay. The bootstrap management application of each tenant
 * is granted `wallet:manage`.
 */
export class Wallets1795000000037 implements MigrationInterface {
  name = 'Wallets1795000000037';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE wallet_merchant_keys (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid NOT NULL,
        wallet varchar(20) NOT NULL CHECK (wallet IN ('apple_pay', 'google_pay')),
        status varchar(20) NOT NULL CHECK (status IN ('pending', 'active')),
        slot integer CHECK (slot BETWEEN 1 AND 5),
        private_key bytea NOT NULL,
        public_key bytea NOT NULL,
        certificate text,
        merchant_identifier varchar(200),
        not_after timestamptz,
        gateway_merchant_id varchar(200),
        created_by uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, id),
        CONSTRAINT wallet_merchant_keys_active_slot CHECK ((status = 'active') = (slot IS NOT NULL))
      )`);
    await q.query(
      `CREATE UNIQUE INDEX wallet_merchant_keys_slot_key ON wallet_merchant_keys (tenant_id, wallet, slot)`,
    );
    await q.query(
      `CREATE INDEX wallet_merchant_keys_tenant_created_idx
         ON wallet_merchant_keys (tenant_id, wallet, created_at, id)`,
    );
    await q.query(`
      CREATE TABLE wallet_replays (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        wallet varchar(20) NOT NULL,
        digest bytea NOT NULL,
        token_id varchar(400) NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, wallet, digest)
      )`);
    // The retention job's purge of ids whose payloads can no longer be accepted anyway.
    await q.query(`CREATE INDEX wallet_replays_expires_idx ON wallet_replays (expires_at)`);
    await grantToBootstrapApplications(q, PERMISSIONS);
  }

  async down(q: QueryRunner): Promise<void> {
    await revokeFromManagementApplications(q, PERMISSIONS);
    await q.query(`DROP TABLE wallet_replays`);
    await q.query(`DROP TABLE wallet_merchant_keys`);
  }
}
