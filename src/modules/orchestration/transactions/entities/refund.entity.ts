import { Column, Entity, PrimaryColumn } from 'typeorm';

export type RefundStatus = 'processing' | 'succeeded' | 'failed';

/** A refund of a transaction, `processing` until its processor settles it. */
@Entity({ name: 'refunds' })
export class RefundEntity {
  @PrimaryColumn('uuid')
  id: string;

  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'transaction_id', type: 'uuid' })
  transactionId: string;

  /** Minor units; a bigint, as text. */
  @Column({ type: 'bigint' })
  amount: string;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ type: 'varchar', length: 20 })
  status: RefundStatus;

  @Column({ name: 'connection_refund_id', type: 'varchar', length: 100, nullable: true })
  connectionRefundId: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
