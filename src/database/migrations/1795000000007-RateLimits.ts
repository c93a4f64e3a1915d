import { MigrationInterface, QueryRunner } from 'typeorm';

/** Request counts per API key digest and fixed one-minute window, shared by every instance. */
export class RateLimits1795000000007 implements MigrationInterface {
  name = 'RateLimits1795000000007';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE rate_limits (
        key text NOT NULL,
        window_start timestamptz NOT NULL,
        hits integer NOT NULL,
        PRIMARY KEY (key, window_start)
      )`);
    await q.query(`CREATE INDEX rate_limits_window_idx ON rate_limits (window_start)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE rate_limits`);
  }
}
