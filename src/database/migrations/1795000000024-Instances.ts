import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One row per running server: the master key versions it holds, refreshed by a heartbeat and deleted
 * when it stops cleanly. Key rotation reads it, so that it never wraps tenant keys under a version a
 * live server cannot unwrap.
 */
export class Instances1795000000024 implements MigrationInterface {
  name = 'Instances1795000000024';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE instances (
        id uuid PRIMARY KEY,
        hostname text NOT NULL,
        pid integer NOT NULL,
        key_versions text[] NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        seen_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE instances`);
  }
}
