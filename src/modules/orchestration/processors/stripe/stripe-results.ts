import Stripe from 'stripe';
import { neverSent, ProcessorUnavailable, ProcessorUnreachable } from '../processor-calls';
import type { AuthorizeResult, OperationResult } from '../processor.port';

type CvvCode = AuthorizeResult['cvvResponseCode'];

/** Stripe's `cvc_check` as the transaction's `cvv_response_code`. */
export function cvvCode(charge: Stripe.Charge | null, cvcSent: boolean): CvvCode {
  if (!cvcSent) return 'not_provided';
  const check = charge?.payment_method_details?.card?.checks?.cvc_check;
  if (check === 'pass') return 'match';
  if (check === 'fail') return 'no_match';
  return 'unavailable';
}

/** Stripe's decline (its `code`, or `decline_code` for `card_declined`) as our `error_code`. */
/**
 * Stripe's refusal as our `error_code`. `declined` is a generic refusal only (`generic_decline`,
 * `do_not_honor`, or a card_declined without a reason): the one decline another connection may retry.
 * Fraud, lost or stolen, blocked, not permitted and invalid numbers get their own codes; any other reason
 * is Stripe's decline code itself. All but `declined` are hard (docs/routing.md).
 */
export function declineCode(code: string | undefined, decline: string | undefined): string {
  if (code === 'incorrect_cvc' || decline === 'incorrect_cvc') return 'incorrect_cvv';
  if (code === 'expired_card' || decline === 'expired_card') return 'expired_card';
  if (code === 'incorrect_number' || code === 'invalid_number') return 'invalid_card_number';
  switch (decline) {
    case undefined:
    case 'generic_decline':
    case 'do_not_honor':
      return 'declined';
    case 'insufficient_funds':
      return 'insufficient_funds';
    case 'fraudulent':
    case 'merchant_blacklist':
    case 'security_violation':
      return 'fraudulent';
    case 'lost_card':
    case 'stolen_card':
      return 'lost_or_stolen';
    case 'pickup_card':
    case 'restricted_card':
    case 'card_blocked':
      return 'card_blocked';
    case 'transaction_not_allowed':
    case 'not_permitted':
    case 'card_not_supported':
    case 'service_not_allowed':
      return 'not_permitted';
    case 'incorrect_number':
    case 'invalid_number':
    case 'invalid_account':
      return 'invalid_card_number';
    default:
      return /^[a-z_]{1,60}$/.test(decline) ? decline : 'declined_other';
  }
}

export const latestCharge = (intent: Stripe.PaymentIntent): Stripe.Charge | null =>
  typeof intent.latest_charge === 'object' ? intent.latest_charge : null;

export function refundResult(refund: Stripe.Refund): OperationResult {
  if (refund.status === 'succeeded') return { status: 'succeeded', vendorId: refund.id };
  if (refund.status === 'pending' || refund.status === 'requires_action')
    return { status: 'pending', vendorId: refund.id };
  return { status: 'failed', vendorId: refund.id, errorCode: refund.failure_reason ?? 'refund_failed' };
}

/**
 * The Stripe error that answered the call (a 4xx); anything else (a time-out, a lost connection, a
 * 5xx, a rate limit: Stripe may or may not have acted) is thrown on as ProcessorUnavailable.
 */
export function unanswered(error: unknown): Stripe.errors.StripeError {
  if (
    error instanceof Stripe.errors.StripeError &&
    error.statusCode !== undefined &&
    error.statusCode >= 400 &&
    error.statusCode < 500 &&
    error.statusCode !== 429 &&
    !(error instanceof Stripe.errors.StripeConnectionError)
  )
    return error;
  // Nothing reached Stripe (no connection), or Stripe refused the call unprocessed (429).
  if (error instanceof Stripe.errors.StripeConnectionError && neverSent(error.detail))
    throw new ProcessorUnreachable('Stripe: no connection');
  if (error instanceof Stripe.errors.StripeError && error.statusCode === 429)
    throw new ProcessorUnreachable('Stripe: 429');
  const status = error instanceof Stripe.errors.StripeError ? (error.statusCode ?? error.type) : 'no answer';
  throw new ProcessorUnavailable(`Stripe: ${status}`);
}
