import { MigrationInterface, QueryRunner } from 'typeorm';

export class Idempotency1795000000004 implements MigrationInterface {
  name = 'Idempotency1795000000004';

  async up(q: QueryRunner): Promise<void> {
    // One row per (tenant, caller, key): the primary key is what makes a claim atomic across instances.
    // The client's key and the request are kept only as HMACs; the stored response body is sealed.
    await q.query(`
      CREATE TABLE idempotency_records (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        scope text NOT NULL,
        key_digest bytea NOT NULL,
        request_digest bytea NOT NULL,
        claim_id uuid NOT NULL,
        state varchar(20) NOT NULL,
        claimed_until timestamptz NOT NULL,
        response_status integer,
        response_headers jsonb,
        response_body bytea,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, scope, key_digest)
      )`);
    await q.query(`CREATE INDEX idempotency_records_expires_idx ON idempotency_records (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_records`);
  }
}
