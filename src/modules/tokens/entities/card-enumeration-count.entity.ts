import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * One card number counted in a card group (digests of first 6 and last 4 digits, and of the number) for the
 * application that brought it: the card enumeration guard counts the distinct numbers of a group.
 */
@Entity({ name: 'card_enumeration_counts' })
export class CardEnumerationCountEntity {
  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'group_digest', type: 'bytea' })
  groupDigest: Buffer;

  @PrimaryColumn({ name: 'number_digest', type: 'bytea' })
  numberDigest: Buffer;

  @PrimaryColumn({ name: 'counted_by', type: 'uuid' })
  countedBy: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
