import { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToBootstrapApplications, revokeFromManagementApplications } from './bootstrap-grants';

const PERMISSIONS = ['token:import'];

/**
 * Card imports (docs/migration.md): each tenant's OpenPGP import key (its private key sealed under the
 * tenant's key; one per tenant, the primary key decides between concurrent first requests), the import
 * jobs with their progress (`lines_done`, checkpointed with the tokens of each batch) and one result row
 * per line of a file: never a card number, a processor's token only sealed. `token:import` is a new
 * management permission, granted to each tenant's first management application.
 */
export class TokenImports1795000000038 implements MigrationInterface {
  name = 'TokenImports1795000000038';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE token_import_keys (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        fingerprint varchar(64) NOT NULL,
        algorithm varchar(40) NOT NULL,
        public_key text NOT NULL,
        private_key bytea NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id)
      )`);
    await q.query(`
      CREATE TABLE token_imports (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid NOT NULL,
        status varchar(12) NOT NULL,
        format varchar(8) NOT NULL,
        file_bytes bigint NOT NULL,
        created_by uuid,
        created_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz,
        total integer,
        imported integer NOT NULL DEFAULT 0,
        duplicates integer NOT NULL DEFAULT 0,
        failed integer NOT NULL DEFAULT 0,
        lines_done integer NOT NULL DEFAULT 0,
        error_code varchar(60),
        PRIMARY KEY (tenant_id, id)
      )`);
    // The worker's query, across tenants: the jobs still to run, oldest first.
    await q.query(`CREATE INDEX token_imports_unfinished_idx ON token_imports (created_at)
      WHERE status IN ('pending', 'processing')`);
    await q.query(`
      CREATE TABLE token_import_results (
        tenant_id uuid NOT NULL,
        import_id uuid NOT NULL,
        line integer NOT NULL,
        status varchar(10) NOT NULL,
        external_id varchar(200),
        token_id varchar(400) COLLATE "C",
        error_field varchar(140),
        error_code varchar(60),
        connection bytea,
        PRIMARY KEY (tenant_id, import_id, line),
        CONSTRAINT token_import_results_import_fkey FOREIGN KEY (tenant_id, import_id)
          REFERENCES token_imports (tenant_id, id) ON DELETE CASCADE
      )`);
    await grantToBootstrapApplications(q, PERMISSIONS);
  }

  async down(q: QueryRunner): Promise<void> {
    await revokeFromManagementApplications(q, PERMISSIONS);
    await q.query(`DROP TABLE token_import_results`);
    await q.query(`DROP TABLE token_imports`);
    await q.query(`DROP TABLE token_import_keys`);
  }
}
