import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A webhook delivery that ended (`succeeded`, or `failed` for good) has no next attempt: its
 * `next_attempt_at` is null, and only a pending delivery must have one. Deliveries that ended before
 * this migration lose the time of the attempt that was due before they ended.
 */
export class EndedDeliveriesNotDue1795000000025 implements MigrationInterface {
  name = 'EndedDeliveriesNotDue1795000000025';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries ALTER COLUMN next_attempt_at DROP NOT NULL`);
    await q.query(`UPDATE webhook_deliveries SET next_attempt_at = NULL WHERE status <> 'pending'`);
    await q.query(`
      ALTER TABLE webhook_deliveries
        ADD CONSTRAINT webhook_deliveries_pending_due_check
          CHECK (status <> 'pending' OR next_attempt_at IS NOT NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pending_due_check`);
    await q.query(`UPDATE webhook_deliveries SET next_attempt_at = updated_at WHERE next_attempt_at IS NULL`);
    await q.query(`ALTER TABLE webhook_deliveries ALTER COLUMN next_attempt_at SET NOT NULL`);
  }
}
