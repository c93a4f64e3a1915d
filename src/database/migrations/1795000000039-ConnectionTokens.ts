import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Processors' tokens on stored cards (docs/buyers.md, "Connection tokens"): for a buyer's stored card,
 * per connection, the token the processor holds for that card (Stripe's payment method, Adyen's stored
 * payment method, Checkout.com's source, Braintree's vaulted payment method), sealed under the tenant's
 * key, with its last four characters for the masked answer, the processor's customer and the network
 * transaction id of the mandate. A row goes with its stored card (foreign key): removing the card from
 * its buyer, deleting the buyer or deleting the token removes it, and so does a connection's row
 * going (a connection that transactions refer to is only marked deleted: its tokens stay, unused).
 */
export class ConnectionTokens1795000000039 implements MigrationInterface {
  name = 'ConnectionTokens1795000000039';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE buyer_connection_tokens (
        tenant_id uuid NOT NULL,
        token_id varchar(400) COLLATE "C" NOT NULL,
        connection_id uuid NOT NULL,
        sealed_token bytea NOT NULL,
        token_last4 varchar(4) NOT NULL,
        connection_customer varchar(256),
        network_transaction_id varchar(64),
        position integer NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, token_id, connection_id),
        CONSTRAINT buyer_connection_tokens_card_fkey FOREIGN KEY (tenant_id, token_id)
          REFERENCES buyer_payment_methods (tenant_id, token_id) ON DELETE CASCADE,
        CONSTRAINT buyer_connection_tokens_connection_fkey FOREIGN KEY (tenant_id, connection_id)
          REFERENCES connections (tenant_id, id) ON DELETE CASCADE
      )`);
    // What the connection's foreign key looks up when a connection row goes.
    await q.query(
      `CREATE INDEX buyer_connection_tokens_connection_idx ON buyer_connection_tokens (tenant_id, connection_id)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE buyer_connection_tokens`);
  }
}
