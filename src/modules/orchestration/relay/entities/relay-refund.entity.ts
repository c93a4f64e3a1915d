import { Column, Entity, PrimaryColumn } from 'typeorm';

export type RelayRefundStatus = 'processing' | 'succeeded' | 'failed';

/**
 * A refund of a payment made at a vendor before the migration (no transaction of ours), through one of
 * the tenant's connections: `processing` until the vendor's answer, its notification or the settlement
 * job settles it.
 */
@Entity({ name: 'relay_refunds' })
export class RelayRefundEntity {
  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ name: 'connection_id', type: 'uuid' })
  connectionId: string;

  /** The vendor's id of the payment refunded (a Stripe PaymentIntent or charge, an Adyen pspReference, ...). */
  @Column({ name: 'vendor_payment_id', type: 'varchar', length: 100 })
  vendorPaymentId: string;

  /** Minor units; a bigint, as text. */
  @Column({ type: 'bigint' })
  amount: string;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ type: 'varchar', length: 200, nullable: true })
  reason: string | null;

  @Column({ type: 'varchar', length: 20 })
  status: RelayRefundStatus;

  /** The vendor's id of the refund, once it named one. */
  @Column({ name: 'vendor_refund_id', type: 'varchar', length: 100, nullable: true })
  vendorRefundId: string | null;

  /** Why it failed (the vendor's code, mapped as a transaction's refund's), else null. */
  @Column({ name: 'error_code', type: 'varchar', length: 100, nullable: true })
  errorCode: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
