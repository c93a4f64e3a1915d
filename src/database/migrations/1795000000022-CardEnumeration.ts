import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The card enumeration guard's counting state: per tenant, the card numbers that callers receiving
 * fingerprints tokenized in the last 24 hours, each as an HMAC of its first 6 and last 4 digits (the
 * group) and an HMAC of the number, under the tenant's fingerprint key; never the number. `counted_by`
 * is the session or application that tokenized it. The retention job deletes rows older than 24 hours.
 */
export class CardEnumeration1795000000022 implements MigrationInterface {
  name = 'CardEnumeration1795000000022';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE card_enumeration_counts (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        group_digest bytea NOT NULL,
        number_digest bytea NOT NULL,
        counted_by uuid NOT NULL,
        created_at timestamptz NOT NULL,
        CONSTRAINT card_enumeration_counts_pkey PRIMARY KEY (tenant_id, group_digest, number_digest, counted_by)
      )`);
    await q.query(`CREATE INDEX card_enumeration_counts_created_idx ON card_enumeration_counts (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE card_enumeration_counts`);
  }
}
