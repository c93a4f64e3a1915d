import { MigrationInterface, QueryRunner } from 'typeorm';

export class TokenVault1795000000001 implements MigrationInterface {
  name = 'TokenVault1795000000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tenants ADD COLUMN key_version varchar(20), ADD COLUMN wrapped_key bytea`);
    await q.query(`
      CREATE TABLE tokens (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        type varchar(20) NOT NULL,
        data bytea NOT NULL,
        mask jsonb,
        card_brand varchar(40),
        fingerprint varchar(64) NOT NULL,
        fingerprint_expression text NOT NULL,
        metadata jsonb,
        search_indexes text[],
        containers text[] NOT NULL,
        expires_at timestamptz,
        created_by uuid,
        created_at timestamptz NOT NULL,
        modified_by uuid,
        modified_at timestamptz
      )`);
    await q.query(`CREATE INDEX tokens_tenant_created_idx ON tokens (tenant_id, created_at, id)`);
    await q.query(`CREATE INDEX tokens_tenant_fingerprint_idx ON tokens (tenant_id, fingerprint)`);
    await q.query(`CREATE INDEX tokens_expires_idx ON tokens (expires_at) WHERE expires_at IS NOT NULL`);
    await q.query(`
      CREATE TABLE token_search_indexes (
        token_id uuid NOT NULL REFERENCES tokens(id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL,
        digest bytea NOT NULL,
        PRIMARY KEY (token_id, digest)
      )`);
    await q.query(
      `CREATE INDEX token_search_indexes_tenant_digest_idx ON token_search_indexes (tenant_id, digest)`,
    );
    await q.query(`
      CREATE TABLE token_cvcs (
        token_id uuid PRIMARY KEY REFERENCES tokens(id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL,
        cvc bytea NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX token_cvcs_expires_idx ON token_cvcs (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE token_cvcs`);
    await q.query(`DROP TABLE token_search_indexes`);
    await q.query(`DROP TABLE tokens`);
    await q.query(`ALTER TABLE tenants DROP COLUMN key_version, DROP COLUMN wrapped_key`);
  }
}
