import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Attempts: every try of a transaction's authorization at one connection (`transaction_attempts`), and
 * on the transaction the number of its last (`attempt`). Each transaction made before has one attempt,
 * at its connection, with the outcome its status shows; one declined by a rule has none.
 */
export class TransactionAttempts1795000000030 implements MigrationInterface {
  name = 'TransactionAttempts1795000000030';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE transaction_attempts (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid NOT NULL,
        transaction_id uuid NOT NULL,
        number int NOT NULL CHECK (number BETWEEN 1 AND 5),
        connection_id uuid NOT NULL,
        status varchar(30) NOT NULL,
        error_code varchar(60),
        auth_response_code varchar(10),
        connection_transaction_id varchar(100),
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, id),
        CONSTRAINT transaction_attempts_number_key UNIQUE (tenant_id, transaction_id, number),
        CONSTRAINT transaction_attempts_transaction_fkey FOREIGN KEY (tenant_id, transaction_id)
          REFERENCES transactions (tenant_id, id) ON DELETE CASCADE
      )`);
    await q.query(`ALTER TABLE transactions ADD COLUMN attempt int NOT NULL DEFAULT 1`);
    await q.query(`
      INSERT INTO transaction_attempts (tenant_id, id, transaction_id, number, connection_id, status, error_code,
                                        auth_response_code, connection_transaction_id, created_at, updated_at)
      SELECT tenant_id, gen_random_uuid(), id, 1, connection_id,
             CASE
               WHEN status = 'processing' AND coalesce(pending_operation, 'authorize') IN ('authorize', 'challenge') THEN 'processing'
               WHEN status = 'buyer_approval_pending' THEN 'buyer_approval_pending'
               WHEN status = 'authorization_declined' THEN 'declined'
               WHEN status = 'authorization_failed' THEN 'failed'
               ELSE 'succeeded'
             END,
             error_code, auth_response_code, connection_transaction_id, created_at, updated_at
        FROM transactions WHERE connection_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE transactions DROP COLUMN attempt`);
    await q.query(`DROP TABLE transaction_attempts`);
  }
}
