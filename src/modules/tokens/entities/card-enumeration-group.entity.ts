import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A card group (digest of first 6 and last 4 digits) the card enumeration guard has counted numbers in,
 * with the version of its count: every request that counts numbers in the group takes a new one.
 */
@Entity({ name: 'card_enumeration_groups' })
export class CardEnumerationGroupEntity {
  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'group_digest', type: 'bytea' })
  groupDigest: Buffer;

  /** From the sequence `card_enumeration_versions`; pg answers a bigint as a string. */
  @Column({ name: 'version', type: 'bigint' })
  version: string;

  @Column({ name: 'counted_at', type: 'timestamptz' })
  countedAt: Date;
}
