import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { ThreeDSecureResult } from '../../processors/processor.port';
import type { TransactionStatus } from '../transaction.dto';
import type { PendingOperation, TransactionState } from '../transaction-state';
import type { PaymentSource } from '../../processors/payment-initiation';

/** The card a transaction charged, as it shows it (never more than the last four digits). */
export interface PaymentMethodSummary {
  scheme: string | null;
  label: string;
  expiration_date: string;
  fingerprint: string;
  /** Absent: `card`. A network token's transactions say so, with where it came from. */
  method?: 'network_token';
  source?: 'apple_pay' | 'google_pay' | 'merchant';
}

/** A payment through a connection, with its amounts (minor units; bigints, as text) and its state. */
@Entity({ name: 'transactions' })
export class TransactionEntity {
  @PrimaryColumn('uuid')
  id: string;

  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** Null for a transaction declined by a rule before any connection was chosen. */
  @Column({ name: 'connection_id', type: 'uuid', nullable: true })
  connectionId: string | null;

  @Column({ name: 'token_id', type: 'varchar', length: 400, collation: 'C' })
  tokenId: string;

  @Column({ type: 'varchar', length: 40 })
  status: TransactionStatus;

  @Column({ name: 'pending_operation', type: 'varchar', length: 20, nullable: true })
  pendingOperation: PendingOperation | null;

  @Column({ name: 'pending_since', type: 'timestamptz', nullable: true })
  pendingSince: Date | null;

  @Column({ name: 'pending_amount', type: 'bigint', nullable: true })
  pendingAmount: string | null;

  @Column({ name: 'previous_status', type: 'varchar', length: 40, nullable: true })
  previousStatus: TransactionStatus | null;

  @Column({ type: 'varchar', length: 20 })
  intent: 'authorize' | 'capture';

  @Column({ type: 'bigint' })
  amount: string;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ type: 'char', length: 2, nullable: true })
  country: string | null;

  @Column({ name: 'authorized_amount', type: 'bigint', default: 0 })
  authorizedAmount: string;

  @Column({ name: 'captured_amount', type: 'bigint', default: 0 })
  capturedAmount: string;

  @Column({ name: 'refunded_amount', type: 'bigint', default: 0 })
  refundedAmount: string;

  @Column({ name: 'external_identifier', type: 'varchar', length: 200, nullable: true })
  externalIdentifier: string | null;

  @Column({ type: 'jsonb', nullable: true })
  metadata: Record<string, string> | null;

  @Column({ name: 'payment_source', type: 'varchar', length: 20 })
  paymentSource: PaymentSource;

  @Column({ name: 'merchant_initiated', type: 'boolean' })
  merchantInitiated: boolean;

  @Column({ name: 'is_subsequent_payment', type: 'boolean' })
  isSubsequentPayment: boolean;

  @Column({ name: 'previous_scheme_transaction_id', type: 'varchar', length: 100, nullable: true })
  previousSchemeTransactionId: string | null;

  @Column({ name: 'three_d_session_id', type: 'varchar', length: 200, nullable: true })
  threeDSessionId: string | null;

  @Column({ name: 'payment_method', type: 'jsonb' })
  paymentMethod: PaymentMethodSummary;

  @Column({ name: 'scheme_transaction_id', type: 'varchar', length: 40, nullable: true })
  schemeTransactionId: string | null;

  @Column({ name: 'connection_transaction_id', type: 'varchar', length: 100, nullable: true })
  connectionTransactionId: string | null;

  @Column({ name: 'error_code', type: 'varchar', length: 60, nullable: true })
  errorCode: string | null;

  @Column({ name: 'auth_response_code', type: 'varchar', length: 10, nullable: true })
  authResponseCode: string | null;

  @Column({ name: 'cvv_response_code', type: 'varchar', length: 20, nullable: true })
  cvvResponseCode: TransactionState['cvvResponseCode'];

  @Column({ name: 'three_d_secure', type: 'jsonb', nullable: true })
  threeDSecure: ThreeDSecureResult | null;

  /** The digest of the buyer approval link's token: how the approval page finds the transaction. */
  @Column({ name: 'approval_token_hash', type: 'bytea', nullable: true })
  approvalTokenHash: Buffer | null;

  /** The approval link's token, sealed with the tenant's key. */
  @Column({ name: 'approval_token', type: 'bytea', nullable: true })
  approvalToken: Buffer | null;

  @Column({ name: 'approval_expires_at', type: 'timestamptz', nullable: true })
  approvalExpiresAt: Date | null;

  @Column({ name: 'authorized_at', type: 'timestamptz', nullable: true })
  authorizedAt: Date | null;

  @Column({ name: 'captured_at', type: 'timestamptz', nullable: true })
  capturedAt: Date | null;

  @Column({ name: 'voided_at', type: 'timestamptz', nullable: true })
  voidedAt: Date | null;

  /** The number of its last attempt (1 to 5): the attempt `connection_id` and the vendor fields are of. */
  @Column({ type: 'int', default: 1 })
  attempt: number;

  /** The buyer it was made for, as the buyer was then (its name fields are a copy: they outlive the buyer). */
  @Column({ name: 'buyer_id', type: 'uuid', nullable: true })
  buyerId: string | null;

  @Column({ name: 'buyer_external_identifier', type: 'varchar', length: 200, nullable: true })
  buyerExternalIdentifier: string | null;

  @Column({ name: 'buyer_display_name', type: 'varchar', length: 200, nullable: true })
  buyerDisplayName: string | null;

  /** `store: true`: its card is stored for its buyer once the authorization succeeds. */
  @Column({ name: 'store_payment_method', type: 'boolean', default: false })
  storePaymentMethod: boolean;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  /** The vendor's 3-D Secure page (a VendorAction as JSON), sealed with the tenant's key. */
  @Column({ name: 'vendor_action', type: 'bytea', nullable: true })
  vendorAction: Buffer | null;
}
