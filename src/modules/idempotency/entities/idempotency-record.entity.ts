import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * One idempotency key of a caller: the claim of the request that holds it, then the response it gave.
 * The primary key (tenant, caller, key digest) is what makes a claim atomic across instances.
 */
@Entity({ name: 'idempotency_records' })
export class IdempotencyRecordEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** The caller: `application:<id>` or `session:<id>`. */
  @PrimaryColumn({ type: 'text' })
  scope: string;

  /** The HMAC of the key, never the key. */
  @PrimaryColumn({ name: 'key_digest', type: 'bytea' })
  keyDigest: Buffer;

  @Column({ name: 'request_digest', type: 'bytea' })
  requestDigest: Buffer;

  @Column({ name: 'claim_id', type: 'uuid' })
  claimId: string;

  @Column({ type: 'varchar', length: 20 })
  state: 'processing' | 'completed';

  @Column({ name: 'claimed_until', type: 'timestamptz' })
  claimedUntil: Date;

  @Column({ name: 'response_status', type: 'integer', nullable: true })
  responseStatus: number | null;

  @Column({ name: 'response_headers', type: 'jsonb', nullable: true })
  responseHeaders: Record<string, string> | null;

  /** Sealed with the tenant's key; null for an empty body. */
  @Column({ name: 'response_body', type: 'bytea', nullable: true })
  responseBody: Buffer | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  /** The resource the request created, pinned so that a retry after an interruption is told it. */
  @Column({ name: 'resource_id', type: 'uuid', nullable: true })
  resourceId: string | null;
}
