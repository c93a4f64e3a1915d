import type { PaymentMethodSummary } from './entities/transaction.entity';
import type { PaymentSource } from '../processors/payment-initiation';

/** A transaction as a create request records it, before its processor is asked. */
export interface NewTransaction {
  id: string;
  tenantId: string;
  /** Null when a rule declines the transaction before any connection is chosen. */
  connectionId: string | null;
  tokenId: string;
  intent: 'authorize' | 'capture';
  amount: number;
  currency: string;
  country: string | null;
  externalIdentifier: string | null;
  metadata: Record<string, string> | null;
  paymentSource: PaymentSource;
  merchantInitiated: boolean;
  isSubsequentPayment: boolean;
  previousSchemeTransactionId: string | null;
  threeDSessionId: string | null;
  paymentMethod: PaymentMethodSummary;
  /** The buyer it is made for, as the buyer is now (kept as it is), and whether to store its card once authorized. */
  buyer: { id: string; externalIdentifier: string | null; displayName: string | null } | null;
  storePaymentMethod: boolean;
  createdBy: string | null;
  createdAt: Date;
  /** Declined by a `decline-early` rule: recorded `authorization_declined` (`declined_by_rule`), nothing pending. */
  declinedByRule?: boolean;
  /** The id of its first attempt (`processing` at its connection), written in the same statement. */
  firstAttemptId?: string;
}

/** The buyer approval link of a transaction, as stored: its digest (for lookup) and itself, sealed. */
export interface IssuedApproval {
  tokenDigest: Buffer;
  sealedToken: Buffer;
  expiresAt: Date;
  /** The vendor's 3-D Secure page, sealed, when the vendor gave one the approval page must keep. */
  sealedVendorAction: Buffer | null;
}

/**
 * Vendors that confirm operations by notification: their operations are left to the notifications
 * until `waitingSince` (now less VENDOR_NOTIFICATION_TIMEOUT_SECONDS), so that the settlement job's
 * batches are not filled by operations it cannot settle yet.
 */
export interface NotifiedVendors {
  formulas: string[];
  waitingSince: Date;
}
