import { Column, Entity, PrimaryColumn } from 'typeorm';

export const ATTEMPT_STATUSES = [
  'processing',
  'succeeded',
  'declined',
  'failed',
  'buyer_approval_pending',
] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/**
 * One try of a transaction's authorization at one connection, numbered from 1. Written `processing`
 * before its vendor call, in a change of its own; its outcome when the vendor answered (docs/routing.md).
 */
@Entity({ name: 'transaction_attempts' })
export class AttemptEntity {
  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ name: 'transaction_id', type: 'uuid' })
  transactionId: string;

  @Column({ type: 'int' })
  number: number;

  @Column({ name: 'connection_id', type: 'uuid' })
  connectionId: string;

  @Column({ type: 'varchar', length: 30 })
  status: AttemptStatus;

  @Column({ name: 'error_code', type: 'varchar', length: 60, nullable: true })
  errorCode: string | null;

  @Column({ name: 'auth_response_code', type: 'varchar', length: 10, nullable: true })
  authResponseCode: string | null;

  @Column({ name: 'connection_transaction_id', type: 'varchar', length: 100, nullable: true })
  connectionTransactionId: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
