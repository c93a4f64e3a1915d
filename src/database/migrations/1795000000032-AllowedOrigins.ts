import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Public applications' `allowed_origins`: the origins whose pages may embed the card elements' frames
 * (their `frame-ancestors`). Existing public applications get none (embeddable nowhere until set). The
 * frame names an application by id alone, without a tenant: an index on `id` finds it.
 */
export class AllowedOrigins1795000000032 implements MigrationInterface {
  name = 'AllowedOrigins1795000000032';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE applications ADD COLUMN allowed_origins text[]`);
    await q.query(`UPDATE applications SET allowed_origins = '{}' WHERE type = 'public'`);
    await q.query(`CREATE INDEX applications_id_idx ON applications (id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX applications_id_idx`);
    await q.query(`ALTER TABLE applications DROP COLUMN allowed_origins`);
  }
}
