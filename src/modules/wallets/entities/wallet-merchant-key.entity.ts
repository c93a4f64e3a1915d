import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

export const WALLETS = ['apple_pay', 'google_pay'] as const;
export type Wallet = (typeof WALLETS)[number];

/** `pending`: an Apple Pay key waiting for its certificate; `active`: it decrypts payloads. */
export type MerchantKeyStatus = 'pending' | 'active';

/**
 * A tenant's wallet merchant key (Apple Pay payment processing key, Google Pay recipient key): an EC
 * P-256 pair made by the vault, its private half sealed under the tenant's key, never answered.
 */
@Entity({ name: 'wallet_merchant_keys' })
@Index('wallet_merchant_keys_tenant_created_idx', ['tenantId', 'wallet', 'createdAt', 'id'])
@Index('wallet_merchant_keys_slot_key', ['tenantId', 'wallet', 'slot'], { unique: true })
export class WalletMerchantKeyEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 20 })
  wallet: Wallet;

  @Column({ type: 'varchar', length: 20 })
  status: MerchantKeyStatus;

  /**
   * An active key's place among the tenant's at most 5 of its wallet (1 to 5, unique per tenant and
   * wallet: the constraint, not a count read first, keeps the 6th out); null while pending.
   */
  @Column({ type: 'integer', nullable: true })
  slot: number | null;

  /** The PKCS #8 DER private key sealed (AES-256-GCM) under the tenant's key, bound to tenant and id. */
  @Column({ name: 'private_key', type: 'bytea' })
  privateKey: Buffer;

  /** The SubjectPublicKeyInfo DER of the public half. */
  @Column({ name: 'public_key', type: 'bytea' })
  publicKey: Buffer;

  /** Apple Pay: the payment processing certificate (PEM), once given. */
  @Column({ type: 'text', nullable: true })
  certificate: string | null;

  /** Apple Pay: the certificate's merchant identifier field (OID 1.2.840.113635.100.6.32), hex. */
  @Column({ name: 'merchant_identifier', type: 'varchar', length: 200, nullable: true })
  merchantIdentifier: string | null;

  /** Apple Pay: when the certificate expires. */
  @Column({ name: 'not_after', type: 'timestamptz', nullable: true })
  notAfter: Date | null;

  /** Google Pay: the gateway merchant id, the recipient id being `gateway:<this>`. */
  @Column({ name: 'gateway_merchant_id', type: 'varchar', length: 200, nullable: true })
  gatewayMerchantId: string | null;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
