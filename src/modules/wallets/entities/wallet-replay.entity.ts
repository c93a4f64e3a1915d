import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { Wallet } from './wallet-merchant-key.entity';

/**
 * A wallet payload's transaction id a tenant has made a token from (Apple's `header.transactionId`,
 * Google's `messageId`), kept as a keyed digest: written in the change that creates the token, so a
 * payload refused before then never uses its id up, and a second one is a 409.
 */
@Entity({ name: 'wallet_replays' })
@Index('wallet_replays_expires_idx', ['expiresAt'])
export class WalletReplayEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ type: 'varchar', length: 20 })
  wallet: Wallet;

  /** HMAC-SHA256 of the transaction id under a key derived from the tenant's. */
  @PrimaryColumn({ type: 'bytea' })
  digest: Buffer;

  @Column({ name: 'token_id', type: 'varchar', length: 400 })
  tokenId: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /**
   * When the payload could no longer be accepted anyway (Apple: 5 minutes after its signing time; Google:
   * its `messageExpiration`): the retention job deletes the row a day after.
   */
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
