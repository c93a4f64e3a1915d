import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency of requests that call a vendor: `resource_id` pins, in the transaction
 * that creates it, the resource a claimed request made before it called the vendor (a transaction). When
 * its process dies, the retry that takes over the stale claim answers that resource instead of creating
 * (and charging) a second one. An id only: no data of the resource rests in the record.
 */
export class IdempotencyResources1795000000015 implements MigrationInterface {
  name = 'IdempotencyResources1795000000015';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE idempotency_records ADD COLUMN resource_id uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE idempotency_records DROP COLUMN resource_id`);
  }
}
