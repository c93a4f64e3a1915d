import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A processor's token for a buyer's stored card at one connection (docs/buyers.md, "Connection tokens"):
 * what a merchant-initiated payment at that connection sends instead of the card. The token is a secret,
 * sealed under the tenant's key; only its last four characters are kept in clear, for the masked answer.
 * The row goes with its stored card (a foreign key to `buyer_payment_methods`).
 */
@Entity({ name: 'buyer_connection_tokens' })
export class BuyerConnectionTokenEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** The stored card: its card token's id. */
  @PrimaryColumn({ name: 'token_id', type: 'varchar', length: 400, collation: 'C' })
  tokenId: string;

  @PrimaryColumn({ name: 'connection_id', type: 'uuid' })
  connectionId: string;

  /** The processor's token, sealed (AES-256-GCM under the tenant's key, bound to the row's keys). */
  @Column({ name: 'sealed_token', type: 'bytea' })
  sealedToken: Buffer;

  /** Its last four characters (fewer for a short token): all the answers show of it. */
  @Column({ name: 'token_last4', type: 'varchar', length: 4 })
  tokenLast4: string;

  /** The processor's customer the token belongs to (Stripe's customer id, Adyen's shopper reference). */
  @Column({ name: 'connection_customer', type: 'varchar', length: 256, nullable: true })
  connectionCustomer: string | null;

  /** The network's id of the payment that set up the mandate, sent when the card goes elsewhere. */
  @Column({ name: 'network_transaction_id', type: 'varchar', length: 64, nullable: true })
  networkTransactionId: string | null;

  /** Its place in the list the card's answer shows. */
  @Column({ type: 'integer' })
  position: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
