import { ProcessorUnavailable } from '../processor-calls';
import type { AuthorizeResult, OperationResult } from '../processor.port';

/** What the adapter reads of a Braintree `Transaction` (TransactionFields in braintree-operations.ts). */
export interface BraintreeTransaction {
  id: string;
  status: string;
  orderId?: string | null;
  merchantAccountId?: string | null;
  amount?: { value?: string | null; currencyCode?: string | null } | null;
  paymentMethodSnapshot?: { __typename?: string; networkTransactionId?: string | null } | null;
  statusHistory?: StatusEvent[] | null;
}

interface StatusEvent {
  __typename?: string;
  status?: string;
  declineType?: string | null;
  gatewayRejectionReason?: string | null;
  processorResponse?: { legacyCode?: string | null; cvvResponse?: string | null } | null;
}

export interface BraintreeRefund {
  id: string;
  status: string;
  orderId?: string | null;
}

/** The digits after the decimal point of a currency (JPY 0, most 2, a few 3), from the platform's data. */
export function currencyExponent(currency: string): number {
  try {
    return (
      new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ??
      2
    );
  } catch {
    return 2;
  }
}

/** Minor units as Braintree's `Amount` scalar: `1299` USD is `"12.99"`, `500` JPY `"500"`. */
export function braintreeAmount(minor: number, currency: string): string {
  const exponent = currencyExponent(currency);
  const digits = String(Math.trunc(Math.abs(minor))).padStart(exponent + 1, '0');
  if (exponent === 0) return digits;
  return `${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`;
}

/** Statuses of an authorization that went through, captured (submitted for settlement or later) or not. */
const CAPTURED = new Set([
  'SUBMITTED_FOR_SETTLEMENT',
  'SETTLING',
  'SETTLEMENT_PENDING',
  'SETTLED',
  'SETTLEMENT_CONFIRMED',
]);

export const isCaptured = (status: string): boolean => CAPTURED.has(status);
export const isApproved = (status: string): boolean => status === 'AUTHORIZED' || CAPTURED.has(status);

/**
 * A processor's legacy response code (`ProcessorDeclinedEvent.processorResponse.legacyCode`) as our
 * `error_code`. `declined` is a generic refusal only (2000 Do Not Honor, 2038 Processor Declined, 2046
 * Declined): the one decline another connection may retry. The rest are hard: insufficient funds, an
 * expired card, a CVV the issuer refused, lost or stolen, fraud, blocked, not permitted, an invalid
 * number get their own codes, any other code is `refused_<code>` (docs/vendors.md has the table).
 */
export function processorDeclineCode(legacyCode: string | null | undefined): string {
  switch (legacyCode) {
    case undefined:
    case null:
    case '2000':
    case '2038':
    case '2046':
      return 'declined';
    case '2001':
      return 'insufficient_funds';
    case '2004':
      return 'expired_card';
    case '2010':
      return 'incorrect_cvv';
    case '2005':
    case '2008':
      return 'invalid_card_number';
    case '2012':
    case '2013':
      return 'lost_or_stolen';
    case '2014':
      return 'fraudulent';
    case '2047':
    case '2053':
    case '2057':
      return 'card_blocked';
    case '2015':
    case '2021':
    case '2022':
      return 'not_permitted';
    default:
      return /^[0-9]{1,6}$/.test(legacyCode) ? `refused_${legacyCode}` : 'refused';
  }
}

/**
 * A gateway rejection (`GatewayRejectedEvent.gatewayRejectionReason`) as our `error_code`: Braintree's
 * own rules refused the payment before any processor saw it. All are hard (the same rules would
 * refuse a retry): fraud and risk rules are `fraudulent`, a CVV rule `incorrect_cvv`, a blocked payment
 * method `card_blocked`, any other reason `gateway_rejected_<reason>`.
 */
export function gatewayRejectionCode(reason: string | null | undefined): string {
  switch (reason) {
    case 'FRAUD':
    case 'RISK_THRESHOLD':
      return 'fraudulent';
    case 'CVV':
      return 'incorrect_cvv';
    case 'PAYMENT_METHOD_BLOCKED':
      return 'card_blocked';
    case 'THREE_D_SECURE':
      return 'three_d_secure_declined';
    default:
      return reason && /^[A-Z_]{1,40}$/.test(reason)
        ? `gateway_rejected_${reason.toLowerCase()}`
        : 'gateway_rejected';
  }
}

type CvvCode = AuthorizeResult['cvvResponseCode'];

/** Braintree's `cvvResponse` (an AvsCvvResponseCode) as the transaction's `cvv_response_code`. */
export function cvvCode(response: string | null | undefined, cvcSent: boolean): CvvCode {
  if (!cvcSent) return 'not_provided';
  if (response === 'MATCHES') return 'match';
  if (response === 'DOES_NOT_MATCH') return 'no_match';
  return 'unavailable';
}

const lastEvent = (tx: BraintreeTransaction, typename: string): StatusEvent | undefined =>
  (tx.statusHistory ?? []).filter((event) => event.__typename === typename).at(-1);

/**
 * A transaction Braintree answered (or a search found) as the attempt's outcome. AUTHORIZED approves; a
 * status from SUBMITTED_FOR_SETTLEMENT on approves captured (intent capture); PROCESSOR_DECLINED and
 * GATEWAY_REJECTED decline with their codes; FAILED (the processor could not be reached: Braintree's
 * 3000 range) is a `service_error` another connection may retry; AUTHORIZING is still under way: left
 * to settlement, as an unanswered call.
 */
export function transactionResult(tx: BraintreeTransaction, cvcSent: boolean): AuthorizeResult {
  const authorized = lastEvent(tx, 'AuthorizedEvent');
  const base: AuthorizeResult = {
    outcome: 'approved',
    captured: false,
    connectionTransactionId: tx.id,
    schemeTransactionId: tx.paymentMethodSnapshot?.networkTransactionId ?? null,
    authResponseCode: null,
    cvvResponseCode: cvvCode(authorized?.processorResponse?.cvvResponse, cvcSent),
    errorCode: null,
    threeDSecure: null,
  };
  if (isApproved(tx.status)) return { ...base, captured: isCaptured(tx.status) };
  const declined = { ...base, outcome: 'declined' as const, schemeTransactionId: null };
  switch (tx.status) {
    case 'AUTHORIZING':
      throw new ProcessorUnavailable('Braintree is still authorizing');
    case 'PROCESSOR_DECLINED': {
      const event = lastEvent(tx, 'ProcessorDeclinedEvent');
      const code = event?.processorResponse?.legacyCode ?? null;
      const errorCode = processorDeclineCode(code);
      return {
        ...declined,
        authResponseCode: code && /^[0-9]{1,6}$/.test(code) ? code : null,
        errorCode,
        cvvResponseCode:
          errorCode === 'incorrect_cvv' && cvcSent
            ? 'no_match'
            : cvvCode(event?.processorResponse?.cvvResponse, cvcSent),
      };
    }
    case 'GATEWAY_REJECTED': {
      const errorCode = gatewayRejectionCode(lastEvent(tx, 'GatewayRejectedEvent')?.gatewayRejectionReason);
      return {
        ...declined,
        errorCode,
        cvvResponseCode: errorCode === 'incorrect_cvv' && cvcSent ? 'no_match' : declined.cvvResponseCode,
      };
    }
    case 'FAILED':
      return { ...declined, outcome: 'failed', errorCode: 'service_error' };
    case 'VOIDED':
      return { ...declined, errorCode: 'cancelled' };
    default:
      return { ...declined, outcome: 'failed', errorCode: 'service_error' };
  }
}

/** A refund's status as our refund's outcome. */
export function refundResult(refund: BraintreeRefund): OperationResult {
  if (isApproved(refund.status)) return { status: 'succeeded', vendorId: refund.id };
  if (refund.status === 'AUTHORIZING') return { status: 'pending', vendorId: refund.id };
  return { status: 'failed', vendorId: refund.id, errorCode: 'refund_failed' };
}
