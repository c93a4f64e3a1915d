import { ProcessorUnavailable } from '../processor-calls';
import type { AuthorizeResult, VendorAction } from '../processor.port';
import type { AdyenServiceError } from './adyen-api';

/** What the adapter reads of Adyen's `PaymentResponse` and `PaymentDetailsResponse`. */
export interface AdyenPaymentResponse {
  resultCode?: string;
  pspReference?: string;
  merchantReference?: string;
  refusalReason?: string;
  refusalReasonCode?: string;
  additionalData?: Record<string, string>;
  action?: { type?: string; url?: string; method?: string; data?: Record<string, string> };
}

type CvvCode = AuthorizeResult['cvvResponseCode'];

/** Adyen's `cvcResult` (`1 Matches`, `2 Does not match`, …) as the transaction's `cvv_response_code`. */
export function cvvCode(cvcResult: string | undefined, cvcSent: boolean): CvvCode {
  if (!cvcSent) return 'not_provided';
  const code = cvcResult?.trim().split(/\s/)[0];
  if (code === '1') return 'match';
  if (code === '2') return 'no_match';
  return 'unavailable';
}

/**
 * Adyen's refusal reason code as our `error_code`. `declined` is a generic refusal only (2, `Refused`):
 * the one decline another connection may retry. Fraud, blocked or restricted cards, not permitted and
 * invalid numbers get their own codes (lost or stolen from the issuer's raw code, 41 or 43); any other
 * reason is `refused_<code>`. All but `declined` are hard
 * (docs/routing.md).
 */
export function refusalCode(code: string | undefined, raw?: string | null): string {
  // A lost or stolen card shows in the issuer's raw code only (ISO 8583 41 and 43).
  if (raw === '41' || raw === '43') return 'lost_or_stolen';
  switch (code) {
    case undefined:
    case '2':
      return 'declined';
    case '6':
      return 'expired_card';
    case '12':
      return 'insufficient_funds';
    case '24':
      return 'incorrect_cvv';
    case '14':
    case '20':
    case '22':
    case '31':
      return 'fraudulent';
    case '5':
    case '25':
      return 'card_blocked';
    case '8':
      return 'invalid_card_number';
    case '10':
    case '23':
      return 'not_permitted';
    default:
      return /^[0-9]{1,3}$/.test(code) ? `refused_${code}` : 'refused';
  }
}

/** The issuer's raw response code, when Adyen passes it on (`refusalCodeRaw`: `05 : Do not honor`). */
function rawCode(additional: Record<string, string> | undefined): string | null {
  const raw = additional?.refusalCodeRaw;
  if (!raw) return null;
  const code = raw.split(':')[0].trim();
  return /^[A-Za-z0-9]{1,10}$/.test(code) ? code : null;
}

/**
 * The 3-D Secure page Adyen sends the buyer to: a `redirect` action by GET (3-D Secure 2's redirect
 * flow). A POST redirect (3-D Secure 1, retired by the schemes) is not supported: null.
 */
function redirectAction(response: AdyenPaymentResponse): VendorAction | null {
  const action = response.action;
  if (action?.type !== 'redirect' || typeof action.url !== 'string') return null;
  if (action.method && action.method.toUpperCase() !== 'GET') return null;
  let url: URL;
  try {
    url = new URL(action.url);
  } catch {
    return null;
  }
  return url.protocol === 'https:' || url.protocol === 'http:' ? { url: url.toString() } : null;
}

/**
 * An authorization's answer (`/payments`, or `/payments/details` after 3-D Secure) by `resultCode`:
 * Authorised approves (captured at once with intent capture), Refused declines with the refusal's
 * code, Error and Cancelled fail or decline, RedirectShopper / IdentifyShopper / ChallengeShopper wait
 * for the buyer. Received and Pending mean the outcome comes later, by notification: left to
 * settlement, as an unanswered call is.
 */
export function authorizeResult(
  response: AdyenPaymentResponse,
  options: { cvcSent: boolean; capture: boolean },
): AuthorizeResult {
  const additional = response.additionalData;
  const base: AuthorizeResult = {
    outcome: 'approved',
    captured: false,
    connectionTransactionId: response.pspReference ?? null,
    schemeTransactionId: additional?.networkTxReference ?? null,
    authResponseCode: null,
    cvvResponseCode: cvvCode(additional?.cvcResult, options.cvcSent),
    errorCode: null,
    threeDSecure: null,
  };
  switch (response.resultCode) {
    case 'Authorised':
      return { ...base, captured: options.capture };
    case 'Refused': {
      const errorCode = refusalCode(response.refusalReasonCode, rawCode(additional));
      return {
        ...base,
        outcome: 'declined',
        schemeTransactionId: null,
        authResponseCode: rawCode(additional),
        errorCode,
        cvvResponseCode: errorCode === 'incorrect_cvv' && options.cvcSent ? 'no_match' : base.cvvResponseCode,
      };
    }
    case 'Cancelled':
      return { ...base, outcome: 'declined', schemeTransactionId: null, errorCode: 'cancelled' };
    case 'RedirectShopper':
    case 'IdentifyShopper':
    case 'ChallengeShopper': {
      const action = redirectAction(response);
      // Only the redirect flow is requested (nativeThreeDS disabled): another action cannot be completed.
      if (!action)
        return { ...base, outcome: 'failed', schemeTransactionId: null, errorCode: 'unsupported_action' };
      return { ...base, outcome: 'challenge', schemeTransactionId: null, vendorAction: action };
    }
    case 'Received':
    case 'Pending':
      throw new ProcessorUnavailable(`Adyen answered ${response.resultCode}; the notification settles it`);
    default:
      return { ...base, outcome: 'failed', schemeTransactionId: null, errorCode: 'service_error' };
  }
}

/** Adyen's 4xx answer (a ServiceError) as our `error_code`: its own code, named as Adyen's. */
export function serviceErrorCode(error: AdyenServiceError): string {
  const code = typeof error.errorCode === 'string' ? error.errorCode : '';
  return /^[A-Za-z0-9_]{1,40}$/.test(code) ? `adyen_${code}` : 'invalid_request';
}

/** A refused call (a 4xx) as a failed authorization carrying Adyen's code. */
export function authorizeRefused(error: AdyenServiceError, cvcSent: boolean): AuthorizeResult {
  return {
    outcome: 'failed',
    captured: false,
    connectionTransactionId: null,
    schemeTransactionId: null,
    authResponseCode: null,
    cvvResponseCode: cvcSent ? 'unavailable' : 'not_provided',
    errorCode: serviceErrorCode(error),
    threeDSecure: null,
  };
}
