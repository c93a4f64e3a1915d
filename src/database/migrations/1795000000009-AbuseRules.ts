import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A session ends with the application that authorized it (a foreign key that
 * cascades; sessions whose authorizer is already gone are removed), and one check value per master
 * key version, so that a process started with other keys stops instead of failing later.
 */
export class AbuseRules1795000000009 implements MigrationInterface {
  name = 'AbuseRules1795000000009';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      DELETE FROM sessions s
       WHERE s.authorized_by IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM applications a WHERE a.id = s.authorized_by)`);
    await q.query(`
      ALTER TABLE sessions ADD CONSTRAINT sessions_authorized_by_fkey
        FOREIGN KEY (authorized_by) REFERENCES applications(id) ON DELETE CASCADE`);
    await q.query(`CREATE INDEX sessions_authorized_by_idx ON sessions (authorized_by)`);
    await q.query(`
      CREATE TABLE master_key_checks (
        version varchar(20) PRIMARY KEY,
        check_value bytea NOT NULL,
        created_at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE master_key_checks`);
    await q.query(`DROP INDEX sessions_authorized_by_idx`);
    await q.query(`ALTER TABLE sessions DROP CONSTRAINT sessions_authorized_by_fkey`);
  }
}
