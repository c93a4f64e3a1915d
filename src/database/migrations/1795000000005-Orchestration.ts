import { MigrationInterface, QueryRunner } from 'typeorm';

export class Orchestration1795000000005 implements MigrationInterface {
  name = 'Orchestration1795000000005';

  async up(q: QueryRunner): Promise<void> {
    // `fields` keeps non-secret values in clear and secret ones as null; `secrets` holds the secret
    // values, sealed with the tenant's key (AAD binds them to the connection).
    await q.query(`
      CREATE TABLE connections (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        formula_id varchar(60) NOT NULL,
        method varchar(20) NOT NULL,
        display_name varchar(100) NOT NULL,
        fields jsonb NOT NULL,
        secrets bytea,
        accepted_countries text[] NOT NULL,
        accepted_currencies text[] NOT NULL,
        active boolean NOT NULL,
        status varchar(20) NOT NULL,
        status_reason text,
        three_d_secure_enabled boolean NOT NULL,
        version integer NOT NULL DEFAULT 1,
        created_by uuid,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        deleted_at timestamptz
      )`);
    await q.query(
      `CREATE INDEX connections_tenant_idx ON connections (tenant_id, created_at) WHERE deleted_at IS NULL`,
    );
    await q.query(
      `CREATE INDEX connections_pending_idx ON connections (updated_at) WHERE status = 'pending'`,
    );
    await q.query(`
      CREATE TABLE transactions (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        connection_id uuid NOT NULL REFERENCES connections(id),
        token_id uuid NOT NULL,
        status varchar(40) NOT NULL,
        pending_operation varchar(20),
        pending_since timestamptz,
        pending_amount bigint,
        previous_status varchar(40),
        intent varchar(20) NOT NULL,
        amount bigint NOT NULL,
        currency char(3) NOT NULL,
        country char(2),
        authorized_amount bigint NOT NULL DEFAULT 0,
        captured_amount bigint NOT NULL DEFAULT 0,
        refunded_amount bigint NOT NULL DEFAULT 0,
        external_identifier varchar(200),
        metadata jsonb,
        payment_source varchar(20) NOT NULL,
        merchant_initiated boolean NOT NULL,
        is_subsequent_payment boolean NOT NULL,
        previous_scheme_transaction_id varchar(100),
        three_d_session_id varchar(200),
        payment_method jsonb NOT NULL,
        scheme_transaction_id varchar(40),
        connection_transaction_id varchar(100),
        error_code varchar(60),
        auth_response_code varchar(10),
        cvv_response_code varchar(20),
        three_d_secure jsonb,
        approval_token_hash bytea,
        approval_token bytea,
        approval_expires_at timestamptz,
        authorized_at timestamptz,
        captured_at timestamptz,
        voided_at timestamptz,
        created_by uuid,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX transactions_tenant_created_idx ON transactions (tenant_id, created_at, id)`);
    await q.query(`CREATE INDEX transactions_connection_idx ON transactions (connection_id)`);
    await q.query(`CREATE UNIQUE INDEX transactions_approval_idx ON transactions (approval_token_hash)`);
    await q.query(
      `CREATE INDEX transactions_unsettled_idx ON transactions (status, updated_at)
        WHERE status IN ('processing', 'capture_pending', 'authorization_void_pending', 'buyer_approval_pending')`,
    );
    await q.query(`
      CREATE TABLE refunds (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        transaction_id uuid NOT NULL REFERENCES transactions(id),
        amount bigint NOT NULL,
        currency char(3) NOT NULL,
        status varchar(20) NOT NULL,
        connection_refund_id varchar(100),
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX refunds_transaction_idx ON refunds (transaction_id, created_at)`);
    await q.query(`CREATE INDEX refunds_processing_idx ON refunds (updated_at) WHERE status = 'processing'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE refunds`);
    await q.query(`DROP TABLE transactions`);
    await q.query(`DROP TABLE connections`);
  }
}
