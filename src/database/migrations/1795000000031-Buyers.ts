import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Buyers and their stored cards (`buyers`, `buyer_payment_methods`), and on each transaction the buyer it
 * was made for, as the buyer was then (a deleted buyer's transactions keep showing it), and whether its
 * card is to be stored once authorized. A stored card goes with its buyer (foreign key) and with its
 * token (the statement trigger of migration 28, which now deletes these rows too).
 */
export class Buyers1795000000031 implements MigrationInterface {
  name = 'Buyers1795000000031';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE buyers (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid NOT NULL,
        external_identifier varchar(200),
        display_name varchar(200),
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, id),
        CONSTRAINT buyers_external_identifier_key UNIQUE (tenant_id, external_identifier)
      )`);
    // `search` matches the start of either name, case-insensitively; lists go newest first.
    await q.query(`CREATE INDEX buyers_created_idx ON buyers (tenant_id, created_at DESC, id DESC)`);
    await q.query(
      `CREATE INDEX buyers_display_name_prefix_idx ON buyers (tenant_id, lower(display_name) text_pattern_ops)`,
    );
    await q.query(
      `CREATE INDEX buyers_external_identifier_prefix_idx ON buyers (tenant_id, lower(external_identifier) text_pattern_ops)`,
    );
    await q.query(`
      CREATE TABLE buyer_payment_methods (
        tenant_id uuid NOT NULL,
        token_id varchar(400) COLLATE "C" NOT NULL,
        buyer_id uuid NOT NULL,
        fingerprint varchar(64) NOT NULL,
        created_at timestamptz NOT NULL,
        last_used_at timestamptz,
        PRIMARY KEY (tenant_id, token_id),
        CONSTRAINT buyer_payment_methods_card_key UNIQUE (tenant_id, buyer_id, fingerprint),
        CONSTRAINT buyer_payment_methods_buyer_fkey FOREIGN KEY (tenant_id, buyer_id)
          REFERENCES buyers (tenant_id, id) ON DELETE CASCADE
      )`);
    await q.query(`
      CREATE OR REPLACE FUNCTION tokens_delete_children() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM token_cvcs AS c USING gone AS g WHERE c.tenant_id = g.tenant_id AND c.token_id = g.id;
        DELETE FROM token_search_indexes AS s USING gone AS g WHERE s.tenant_id = g.tenant_id AND s.token_id = g.id;
        DELETE FROM buyer_payment_methods AS m USING gone AS g WHERE m.tenant_id = g.tenant_id AND m.token_id = g.id;
        RETURN NULL;
      END $$`);
    await q.query(`
      ALTER TABLE transactions
        ADD COLUMN buyer_id uuid,
        ADD COLUMN buyer_external_identifier varchar(200),
        ADD COLUMN buyer_display_name varchar(200),
        ADD COLUMN store_payment_method boolean NOT NULL DEFAULT false`);
    await q.query(`
      CREATE INDEX transactions_buyer_idx ON transactions (tenant_id, buyer_id, created_at DESC, id DESC)
        WHERE buyer_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX transactions_buyer_idx`);
    await q.query(`
      ALTER TABLE transactions
        DROP COLUMN buyer_id, DROP COLUMN buyer_external_identifier, DROP COLUMN buyer_display_name,
        DROP COLUMN store_payment_method`);
    await q.query(`
      CREATE OR REPLACE FUNCTION tokens_delete_children() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM token_cvcs AS c USING gone AS g WHERE c.tenant_id = g.tenant_id AND c.token_id = g.id;
        DELETE FROM token_search_indexes AS s USING gone AS g WHERE s.tenant_id = g.tenant_id AND s.token_id = g.id;
        RETURN NULL;
      END $$`);
    await q.query(`DROP TABLE buyer_payment_methods`);
    await q.query(`DROP TABLE buyers`);
  }
}
