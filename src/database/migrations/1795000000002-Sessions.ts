import { MigrationInterface, QueryRunner } from 'typeorm';

export class Sessions1795000000002 implements MigrationInterface {
  name = 'Sessions1795000000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE sessions (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
        key_hash bytea NOT NULL,
        nonce_hash bytea,
        permissions text[] NOT NULL DEFAULT '{}',
        rules jsonb NOT NULL DEFAULT '[]',
        authorized_by uuid,
        authorized_at timestamptz,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE UNIQUE INDEX sessions_key_hash_key ON sessions (key_hash)`);
    await q.query(`CREATE UNIQUE INDEX sessions_nonce_hash_key ON sessions (nonce_hash)`);
    await q.query(`CREATE INDEX sessions_expires_idx ON sessions (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE sessions`);
  }
}
