import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Connection environments: `sandbox` (the built-in simulator, what every existing
 * connection is), `test` (the vendor's test endpoints) or `live` (its production endpoints).
 */
export class ConnectionEnvironments1795000000013 implements MigrationInterface {
  name = 'ConnectionEnvironments1795000000013';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE connections
        ADD COLUMN environment varchar(10) NOT NULL DEFAULT 'sandbox'
          CONSTRAINT connections_environment_check CHECK (environment IN ('sandbox', 'test', 'live'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE connections DROP COLUMN environment`);
  }
}
