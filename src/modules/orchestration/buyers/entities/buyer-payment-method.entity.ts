import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A card token stored for a buyer: one buyer per token, one token per card (fingerprint) and buyer. The
 * card's details shown (scheme, last four, expiry) are read from the token; the row goes with its token
 * (a trigger on `tokens`) and with its buyer (a foreign key).
 */
@Entity({ name: 'buyer_payment_methods' })
export class BuyerPaymentMethodEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'token_id', type: 'varchar', length: 400, collation: 'C' })
  tokenId: string;

  @Column({ name: 'buyer_id', type: 'uuid' })
  buyerId: string;

  /** The token's fingerprint (a keyed digest, as on the token): what makes a second copy of a card a duplicate. */
  @Column({ type: 'varchar', length: 64 })
  fingerprint: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** Set by each successful transaction with the card; null until the first. */
  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;
}
