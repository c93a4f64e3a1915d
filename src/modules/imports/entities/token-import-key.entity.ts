import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A tenant's OpenPGP import key: the public key in clear, the private key sealed under the tenant's key. */
@Entity({ name: 'token_import_keys' })
export class TokenImportKeyEntity {
  /** One key per tenant: the primary key decides between concurrent first requests. */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** The primary key's OpenPGP fingerprint (40 hex digits), as `gpg --recipient` takes it. */
  @Column({ type: 'varchar', length: 64 })
  fingerprint: string;

  @Column({ type: 'varchar', length: 40 })
  algorithm: string;

  /** Armored. */
  @Column({ name: 'public_key', type: 'text' })
  publicKey: string;

  /** The armored private key, sealed (AES-256-GCM) under the tenant's encryption key. */
  @Column({ name: 'private_key', type: 'bytea' })
  privateKey: Buffer;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
