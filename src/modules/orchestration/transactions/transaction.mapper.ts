import { toReconciliationId } from '../processors/reconciliation';
import type { RefundRow } from './refunds.repository';
import { intentOutcome } from './transaction-state';
import type { AttemptRow } from './attempts.repository';
import type { AttemptDto, RefundDto, TransactionDto } from './transaction.dto';
import type { TransactionRow } from './transactions.repository';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * The transaction object; `approvalUrl` only while the buyer has to approve. The card's `fingerprint`
 * only when `readable` (the caller may read the token now): told for a card the caller chose, it would
 * say whether that number is a stored card's (the card-number oracle of docs/reliability.md's abuse
 * table).
 */
export function transactionDto(
  row: TransactionRow,
  approvalUrl: string | null,
  readable: boolean,
): TransactionDto {
  return {
    type: 'transaction',
    id: row.id,
    reconciliation_id: toReconciliationId(row.id),
    status: row.status,
    intent: row.intent,
    intent_outcome: intentOutcome(row),
    amount: Number(row.amount),
    currency: row.currency,
    authorized_amount: Number(row.authorized_amount),
    captured_amount: Number(row.captured_amount),
    refunded_amount: Number(row.refunded_amount),
    country: row.country,
    external_identifier: row.external_identifier,
    metadata: row.metadata,
    payment_source: row.payment_source,
    merchant_initiated: row.merchant_initiated,
    is_subsequent_payment: row.is_subsequent_payment,
    previous_scheme_transaction_id: row.previous_scheme_transaction_id,
    payment_method: {
      type: 'payment-method',
      method: row.payment_method.method ?? 'card',
      ...(row.payment_method.source ? { source: row.payment_method.source } : {}),
      id: row.token_id,
      scheme: row.payment_method.scheme,
      label: row.payment_method.label,
      expiration_date: row.payment_method.expiration_date,
      ...(readable ? { fingerprint: row.payment_method.fingerprint } : {}),
      approval_url: approvalUrl,
    },
    buyer: row.buyer_id
      ? {
          id: row.buyer_id,
          external_identifier: row.buyer_external_identifier,
          display_name: row.buyer_display_name,
        }
      : null,
    connection: row.connection_id
      ? {
          id: row.connection_id,
          connection_formula_id: row.c_formula_id!,
          display_name: row.c_display_name!,
          method: row.c_method!,
        }
      : null,
    scheme_transaction_id: row.scheme_transaction_id,
    connection_transaction_id: row.connection_transaction_id,
    error_code: row.error_code,
    auth_response_code: row.auth_response_code,
    cvv_response_code: row.cvv_response_code,
    three_d_secure: row.three_d_secure,
    authorized_at: iso(row.authorized_at),
    captured_at: iso(row.captured_at),
    voided_at: iso(row.voided_at),
    approval_expires_at: row.status === 'buyer_approval_pending' ? iso(row.approval_expires_at) : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function refundDto(row: RefundRow): RefundDto {
  return {
    type: 'refund',
    id: row.id,
    transaction_id: row.transaction_id,
    amount: Number(row.amount),
    currency: row.currency,
    status: row.status,
    created_at: row.created_at.toISOString(),
  };
}

export function attemptDto(row: AttemptRow): AttemptDto {
  return {
    type: 'attempt',
    id: row.id,
    number: row.number,
    connection: {
      id: row.connection_id,
      connection_formula_id: row.c_formula_id,
      display_name: row.c_display_name,
      method: row.c_method,
    },
    status: row.status,
    error_code: row.error_code,
    auth_response_code: row.auth_response_code,
    connection_transaction_id: row.connection_transaction_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
