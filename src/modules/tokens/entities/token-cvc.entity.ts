import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A card's CVC, sealed, kept apart from the token and for one hour at most (deleted on first use). */
@Entity({ name: 'token_cvcs' })
export class TokenCvcEntity {
  @PrimaryColumn({ name: 'token_id', type: 'varchar', length: 400, collation: 'C' })
  tokenId: string;

  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ type: 'bytea' })
  cvc: Buffer;

  /** The generation of the tenant's data key the CVC is sealed under. */
  @Column({ name: 'data_key', type: 'integer', default: 0 })
  dataKey: number;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
