import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Token search: `metadata.<name>:<value>` terms compile to `metadata @> {name: value}`,
 * which this GIN index serves (jsonb_path_ops: containment only, smaller than the default operator
 * class). Without it, a metadata search or list filter reads every token of the tenant.
 */
export class TokenMetadataIndex1795000000017 implements MigrationInterface {
  name = 'TokenMetadataIndex1795000000017';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX tokens_metadata_idx ON tokens USING gin (metadata jsonb_path_ops)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX tokens_metadata_idx`);
  }
}
