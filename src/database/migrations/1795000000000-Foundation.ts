import { MigrationInterface, QueryRunner } from 'typeorm';

export class Foundation1795000000000 implements MigrationInterface {
  name = 'Foundation1795000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE tenants (
        id uuid PRIMARY KEY,
        name varchar(200) NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE applications (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        name varchar(200) NOT NULL,
        type varchar(20) NOT NULL CHECK (type IN ('public', 'private', 'management')),
        permissions text[] NOT NULL DEFAULT '{}',
        rules jsonb,
        created_by uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_by uuid,
        modified_at timestamptz
      )`);
    await q.query(`CREATE INDEX applications_tenant_created_idx ON applications (tenant_id, created_at, id)`);
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        application_id uuid NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
        key_hash bytea NOT NULL,
        created_by uuid,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX api_keys_key_hash_key ON api_keys (key_hash)`);
    await q.query(
      `CREATE INDEX api_keys_tenant_application_idx ON api_keys (tenant_id, application_id, created_at)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE api_keys`);
    await q.query(`DROP TABLE applications`);
    await q.query(`DROP TABLE tenants`);
  }
}
