import { MigrationInterface, QueryRunner } from 'typeorm';

/** One row per scheduled job tick that ran, whichever instance ran it: the primary key makes it once. */
export class JobRuns1795000000008 implements MigrationInterface {
  name = 'JobRuns1795000000008';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE job_runs (
        job varchar(60) NOT NULL,
        tick_start timestamptz NOT NULL,
        instance_id uuid NOT NULL,
        ran_at timestamptz NOT NULL,
        PRIMARY KEY (job, tick_start)
      )`);
    await q.query(`CREATE INDEX job_runs_ran_at_idx ON job_runs (ran_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE job_runs`);
  }
}
