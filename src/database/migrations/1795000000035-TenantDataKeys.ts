import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tenants' data keys in generations (`vault keys rotate --tenant-keys`): generation 0 is the key derived
 * from the tenant's root key (every token before the first rotation); each later one a random key sealed
 * under the root key (`tenant_data_keys`). A token and a CVC name the generation their data is sealed
 * under (`data_key`). A rotation's run (`data_key_rotations`) makes one new generation per tenant when it
 * starts, then re-encrypts in batches; a run not finished is resumed, never started again. A new
 * generation announces itself on `vault_changes`, so that every instance seals under it at once.
 */
export class TenantDataKeys1795000000035 implements MigrationInterface {
  name = 'TenantDataKeys1795000000035';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE tenant_data_keys (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        generation integer NOT NULL CHECK (generation > 0),
        sealed_key bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, generation)
      )`);
    await q.query(`ALTER TABLE tokens ADD COLUMN data_key integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE token_cvcs ADD COLUMN data_key integer NOT NULL DEFAULT 0`);
    await q.query(`
      CREATE TABLE data_key_rotations (
        id uuid PRIMARY KEY,
        started_at timestamptz NOT NULL,
        finished_at timestamptz
      )`);
    // At most one run unfinished.
    await q.query(
      `CREATE UNIQUE INDEX data_key_rotations_running_idx ON data_key_rotations ((true)) WHERE finished_at IS NULL`,
    );
    await q.query(`
      CREATE TRIGGER tenant_data_keys_changes AFTER INSERT OR DELETE ON tenant_data_keys
        FOR EACH STATEMENT EXECUTE FUNCTION notify_changes()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE data_key_rotations`);
    await q.query(`ALTER TABLE token_cvcs DROP COLUMN data_key`);
    await q.query(`ALTER TABLE tokens DROP COLUMN data_key`);
    await q.query(`DROP TABLE tenant_data_keys`);
  }
}
