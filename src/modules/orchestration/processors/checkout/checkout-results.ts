import { ProcessorUnavailable } from '../processor-calls';
import type { AuthorizeResult, VendorAction } from '../processor.port';
import type { CheckoutError } from './checkout-api';

/** What the adapter reads of Checkout.com's `PaymentResponse` (201), `PaymentAcceptedResponse` (202) and `PaymentDetails`. */
export interface CheckoutPayment {
  id?: string;
  status?: string;
  approved?: boolean;
  reference?: string;
  response_code?: string;
  scheme_id?: string;
  source?: { type?: string; cvv_check?: string };
  _links?: { redirect?: { href?: string } };
}

/** One entry of `GET /payments/{id}/actions` (`PaymentAction`). */
export interface CheckoutAction {
  id?: string;
  type?: string;
  approved?: boolean;
  amount?: number;
  reference?: string;
  response_code?: string;
}

type CvvCode = AuthorizeResult['cvvResponseCode'];

/** Checkout.com's `cvv_check` (`Y` matched, `N` did not, anything else not checked) as `cvv_response_code`. */
export function cvvCode(check: string | undefined, cvcSent: boolean): CvvCode {
  if (!cvcSent) return 'not_provided';
  if (check === 'Y') return 'match';
  if (check === 'N') return 'no_match';
  return 'unavailable';
}

/**
 * Checkout.com's response codes (`response_code`) as our `error_code`, by section 17's classes. `declined`
 * (generic, "do not honour" and "refer to issuer") and `service_error` (the issuer or the scheme did not
 * answer) are the soft ones another connection may retry; every other code is hard. The table is in
 * docs/vendors.md.
 */
const RESPONSE_CODES: Record<string, string> = {
  '20001': 'declined',
  '20002': 'declined',
  '20005': 'declined',
  '20019': 'declined',
  '20046': 'declined',
  '200N0': 'declined',
  '20022': 'service_error',
  '20068': 'service_error',
  '20091': 'service_error',
  '20096': 'service_error',
  '20051': 'insufficient_funds',
  '20054': 'expired_card',
  '30033': 'expired_card',
  '20082': 'incorrect_cvv',
  '20087': 'incorrect_cvv',
  '200N7': 'incorrect_cvv',
  '20014': 'invalid_card_number',
  '20056': 'invalid_card_number',
  '30015': 'invalid_card_number',
  '30041': 'lost_or_stolen',
  '30043': 'lost_or_stolen',
  '20059': 'fraudulent',
  '20063': 'fraudulent',
  '20083': 'fraudulent',
  '30034': 'fraudulent',
  '40101': 'fraudulent',
  '20062': 'card_blocked',
  '20067': 'card_blocked',
  '30004': 'card_blocked',
  '30007': 'card_blocked',
  '30036': 'card_blocked',
  '30044': 'card_blocked',
  '30046': 'card_blocked',
  '20057': 'not_permitted',
  '20058': 'not_permitted',
  '20093': 'not_permitted',
  '20103': 'not_permitted',
};

/** A response code as our `error_code`: the table above, else `refused_<code>` (hard). */
export function declineCode(code: string | undefined): string {
  if (code === undefined) return 'declined';
  const known = RESPONSE_CODES[code];
  if (known) return known;
  return /^[0-9A-Z]{5}$/.test(code) ? `refused_${code}` : 'refused';
}

/** Every mapped response code with its `error_code` (for the documentation's table and its test). */
export const CHECKOUT_RESPONSE_CODES: Readonly<Record<string, string>> = RESPONSE_CODES;

/** A response code as shown (`auth_response_code`): Checkout.com's five characters, else nothing. */
const shownCode = (code: string | undefined): string | null =>
  typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;

/** The 3-D Secure page Checkout.com sends the buyer to: `_links.redirect`, an http(s) URL. */
function redirectOf(payment: CheckoutPayment): VendorAction | null {
  const href = payment._links?.redirect?.href;
  if (typeof href !== 'string') return null;
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return null;
  }
  return url.protocol === 'https:' || url.protocol === 'http:' ? { url: url.toString() } : null;
}

/** A payment id as Checkout.com writes it (`pay_` and 26 characters), else null. */
export function paymentId(id: unknown): string | null {
  return typeof id === 'string' && /^pay_\w{26}$/.test(id) ? id : null;
}

/** The statuses of an authorized payment (captured or not, refunded or not). */
const AUTHORIZED = new Set([
  'Authorized',
  'Card Verified',
  'Partially Captured',
  'Captured',
  'Partially Refunded',
  'Refunded',
  'Paid',
]);

/** Whether a payment's status says it was authorized (whatever happened after). */
export const wasAuthorized = (status: string | undefined): boolean => AUTHORIZED.has(status ?? '');

/**
 * `POST /payments`' answer (201, or 202 `Pending`), or `GET /payments/{id}` after 3-D Secure: approved
 * (captured at once with intent capture: `capture: true` asks Checkout.com to capture it), declined with
 * the response code's class, or waiting for the buyer's 3-D Secure page. A `Pending` payment without a
 * redirect will be decided later: left to settlement (its webhook or `GET /payments/{id}`).
 */
export function authorizeResult(
  payment: CheckoutPayment,
  options: { cvcSent: boolean; capture: boolean },
): AuthorizeResult {
  const base: AuthorizeResult = {
    outcome: 'approved',
    captured: false,
    connectionTransactionId: paymentId(payment.id),
    schemeTransactionId: typeof payment.scheme_id === 'string' ? payment.scheme_id : null,
    authResponseCode: shownCode(payment.response_code),
    cvvResponseCode: cvvCode(payment.source?.cvv_check, options.cvcSent),
    errorCode: null,
    threeDSecure: null,
  };
  if (payment.status === 'Pending') {
    const action = redirectOf(payment);
    if (!action)
      throw new ProcessorUnavailable('Checkout.com answered Pending; its webhook or a look-up settles it');
    return { ...base, outcome: 'challenge', schemeTransactionId: null, vendorAction: action };
  }
  if (payment.approved === true && wasAuthorized(payment.status))
    return { ...base, captured: options.capture };
  const errorCode = declineCode(payment.response_code);
  return {
    ...base,
    outcome: 'declined',
    schemeTransactionId: null,
    errorCode,
    cvvResponseCode: errorCode === 'incorrect_cvv' && options.cvcSent ? 'no_match' : base.cvvResponseCode,
  };
}

/** A 4xx answer as our `error_code`: an invalid card number as such, else Checkout.com's first code. */
export function errorCodeOf(status: number, error: CheckoutError): string {
  if (status === 401 || status === 403) return 'checkout_unauthorized';
  if (status === 404) return 'checkout_not_found';
  const codes = Array.isArray(error.error_codes) ? error.error_codes : [];
  if (codes.includes('card_number_invalid')) return 'invalid_card_number';
  const first = codes.find((c) => typeof c === 'string' && /^[a-z0-9_]{1,60}$/.test(c));
  return first ? `checkout_${first}` : 'invalid_request';
}

/** A refused call (a 4xx) as a failed authorization carrying its code. */
export function authorizeRefused(status: number, error: CheckoutError, cvcSent: boolean): AuthorizeResult {
  return {
    outcome: 'failed',
    captured: false,
    connectionTransactionId: null,
    schemeTransactionId: null,
    authResponseCode: null,
    cvvResponseCode: cvcSent ? 'unavailable' : 'not_provided',
    errorCode: errorCodeOf(status, error),
    threeDSecure: null,
  };
}
