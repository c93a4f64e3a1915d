import { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToBootstrapApplications, revokeFromManagementApplications } from './bootstrap-grants';

const PROXY_PERMISSIONS = ['proxy:create', 'proxy:read', 'proxy:update', 'proxy:delete'];

/**
 * Pre-configured proxies: one row per proxy, found by its key (`key_prx_...`, an
 * address rather than a credential, shown on every read) when a request names it in `BT-PROXY-KEY`.
 * The management application each tenant was created with holds every management permission, so it is granted the new `proxy:*` ones here.
 */
export class Proxies1795000000011 implements MigrationInterface {
  name = 'Proxies1795000000011';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE proxies (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid NOT NULL,
        key varchar(100) NOT NULL,
        name varchar(200) NOT NULL,
        destination_url varchar(2000) NOT NULL,
        require_auth boolean NOT NULL DEFAULT true,
        created_by uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id)
      )`);
    // Looked up by key alone (the request names no tenant); tenant_id follows so that the index can stay
    // unique on a table distributed by tenant (docs/scaling.md). The key's 32 random bytes keep it unique.
    await q.query(`CREATE UNIQUE INDEX proxies_key_key ON proxies (key, tenant_id)`);
    await q.query(`CREATE INDEX proxies_tenant_created_idx ON proxies (tenant_id, created_at, id)`);
    await grantToBootstrapApplications(q, PROXY_PERMISSIONS);
  }

  async down(q: QueryRunner): Promise<void> {
    await revokeFromManagementApplications(q, PROXY_PERMISSIONS);
    await q.query(`DROP TABLE proxies`);
  }
}
