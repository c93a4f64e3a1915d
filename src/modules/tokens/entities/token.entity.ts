import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { TokenMask, TokenType } from '../data/validate-data';

/** A token: its data sealed with the tenant's key (`data`), the rest in the clear for lists and rules. */
@Entity({ name: 'tokens' })
export class TokenEntity {
  /** A client's id or a generated uuid; byte order (`COLLATE "C"`). */
  @PrimaryColumn({ type: 'varchar', length: 400, collation: 'C' })
  id: string;

  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ type: 'varchar', length: 20 })
  type: TokenType;

  @Column({ type: 'bytea' })
  data: Buffer;

  /** The generation of the tenant's data key `data` is sealed under (0: the one derived from its root key). */
  @Column({ name: 'data_key', type: 'integer', default: 0 })
  dataKey: number;

  @Column({ type: 'jsonb', nullable: true })
  mask: TokenMask | null;

  @Column({ name: 'card_brand', type: 'varchar', length: 40, nullable: true })
  cardBrand: string | null;

  /** The card's BIN (first 6 or 8 digits, as PCI DSS allows them shown): the enrichments' `bin`. */
  @Column({ name: 'card_bin', type: 'varchar', length: 8, nullable: true })
  cardBin: string | null;

  @Column({ type: 'varchar', length: 64 })
  fingerprint: string;

  /**
   * The groups (digests) the fingerprint has still to be counted in by the card enumeration guard
   * before a read shows it; null once counted or when it holds no card number.
   */
  @Column({ name: 'fingerprint_groups', type: 'bytea', array: true, nullable: true })
  fingerprintGroups: Buffer[] | null;

  @Column({ name: 'fingerprint_expression', type: 'text' })
  fingerprintExpression: string;

  @Column({ type: 'jsonb', nullable: true })
  metadata: Record<string, string> | null;

  @Column({ name: 'search_indexes', type: 'text', array: true, nullable: true })
  searchIndexes: string[] | null;

  @Column({ type: 'text', array: true })
  containers: string[];

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'modified_by', type: 'uuid', nullable: true })
  modifiedBy: string | null;

  @Column({ name: 'modified_at', type: 'timestamptz', nullable: true })
  modifiedAt: Date | null;
}
