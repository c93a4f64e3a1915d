import { toReconciliationId } from '../reconciliation';
import type {
  AuthorizeRequest,
  AuthorizeResult,
  CaptureRequest,
  ChallengeRequest,
  Credentials,
  OperationRequest,
  OperationResult,
  PollRequest,
  ProcessorPort,
  RefundRequest,
  ThreeDSecureData,
  VendorHooks,
  VendorSettings,
  VerificationResult,
} from '../processor.port';
import {
  attemptReference,
  authorizeIdempotencyKey,
  cardholderPresent,
  vendorReturnUrl,
} from '../processor.port';
import {
  CHECKOUT_TIMEOUT_MS,
  CheckoutAnswer,
  checkoutBaseUrl,
  checkoutCall,
  ProcessorAnswered5xx,
} from './checkout-api';
import {
  authorizeRefused,
  authorizeResult,
  CheckoutAction,
  CheckoutPayment,
  errorCodeOf,
  paymentId,
} from './checkout-results';
import { defaultEci, NetworkTokenFacts, networkTokenOf, withCryptogram } from '../network-token';

/** A payment id that cannot exist: the credentials check asks for it (404 with a good key, 401 without). */
const PROBE_PAYMENT = `pay_${'0'.repeat(26)}`;

/** How long an operation Checkout.com has not recorded may still appear (its 202 work is asynchronous). */
export const CHECKOUT_ACTION_WINDOW_MS = 90_000;

/** A processing channel id as Checkout.com's Dashboard shows it. */
const PROCESSING_CHANNEL = /^pc_[a-z0-9]{26}$/;

/** The merchant references of a transaction's capture and void, and of one of its refunds. */
export const checkoutCaptureReference = (reconciliationId: string): string => `${reconciliationId}.capture`;
export const checkoutVoidReference = (reconciliationId: string): string => `${reconciliationId}.void`;
export const checkoutRefundReference = (reconciliationId: string, refundId: string): string =>
  `${reconciliationId}.${toReconciliationId(refundId)}`;

/** `three_d_secure_data` as Checkout.com's `3ds` for a third-party MPI (a DS transaction id as `xid`). */
function threeDsOf(request: AuthorizeRequest): Record<string, unknown> {
  const data: ThreeDSecureData | undefined = request.threeDSecureData;
  if (!data) return { enabled: request.threeDSecureEnabled };
  return {
    enabled: true,
    eci: data.eci,
    cryptogram: data.cavv,
    version: data.version,
    ...(data.dsTransactionId ? { xid: data.dsTransactionId } : {}),
  };
}

/** Checkout.com's `token_type` of a network token: the wallet's, or the scheme's token service. */
function tokenTypeOf(token: NetworkTokenFacts): string | undefined {
  if (token.source === 'apple_pay') return 'applepay';
  if (token.source === 'google_pay') return 'googlepay';
  return token.scheme === 'visa' ? 'vts' : token.scheme === 'mastercard' ? 'mdes' : undefined;
}

/**
 * The payment's `source`. A card is a `card` source. A network token with its cryptogram is a
 * `network_token` source (`04_PaymentRequestNetworkTokenSource`: the DPAN as `token`, its expiry, the
 * `token_type`, the cryptogram and the ECI, which that schema requires: defaultEci when the wallet gave none).
 * A network token without a cryptogram (a later payment with it, or a merchant's token of a scheme
 * without a `token_type`) cannot be a `network_token` source in Checkout.com's document: its DPAN goes
 * as a stored `card` source (docs/vendors.md).
 */
export function checkoutSource(request: AuthorizeRequest): Record<string, unknown> {
  const token = networkTokenOf(request);
  const tokenType = token ? tokenTypeOf(token) : undefined;
  if (withCryptogram(token) && tokenType)
    return {
      type: 'network_token',
      token: request.card.number,
      expiry_month: request.card.expiration_month,
      expiry_year: request.card.expiration_year,
      token_type: tokenType,
      cryptogram: token.cryptogram,
      eci: token.eci ?? defaultEci(token.scheme),
    };
  // A network token carries no CVC (its cryptogram stands for it).
  const cvcSent = request.cvc !== undefined && !token;
  return {
    type: 'card',
    number: request.card.number,
    expiry_month: request.card.expiration_month,
    expiry_year: request.card.expiration_year,
    ...(cvcSent ? { cvv: request.cvc } : {}),
    // A card on file charged without the cardholder giving it, or a network token's DPAN without its cryptogram.
    ...(cardholderPresent(request) && !token ? {} : { stored: true }),
  };
}

/**
 * checkout-card against Checkout.com's payments API (NAS accounts), over plain HTTP: `POST /payments`
 * with the card as a `card` source, `POST /payments/{id}/captures`, `/voids` and `/refunds` (answered
 * 202: pending until the webhook, CheckoutNotificationsService, or the settlement job's look-up settles
 * them), `GET /payments/{id}` and `/actions`. Every POST carries a `Cko-Idempotency-Key` derived from
 * the reconciliation id and the operation (an attempt's authorization as section 17 says), and the
 * payment's `reference` names the attempt, so that a call repeated after a crash is answered from its
 * first run and every webhook names the transaction. Card data, CVCs and keys never leave this class
 * except in the request to Checkout.com.
 */
export class CheckoutProcessor implements ProcessorPort, VendorHooks {
  static readonly formula = 'checkout-card';
  readonly formulaId = CheckoutProcessor.formula;
  /** How long a call may take (tests shorten it). */
  timeoutMs = CHECKOUT_TIMEOUT_MS;

  constructor(private readonly settings: VendorSettings) {}

  private call<T>(
    credentials: Credentials,
    method: 'GET' | 'POST',
    path: string,
    options: { body?: Record<string, unknown>; idempotencyKey?: string } = {},
  ): Promise<CheckoutAnswer<T>> {
    return checkoutCall<T>(
      checkoutBaseUrl(this.settings.baseUrl, this.settings.environment),
      credentials,
      method,
      path,
      { ...options, timeoutMs: this.timeoutMs },
    );
  }

  /** A processing channel id must look like one (the value is never echoed). */
  checkFields(values: ReadonlyMap<string, string>): Record<string, string> {
    const channel = values.get('processing_channel_id');
    if (channel !== undefined && !PROCESSING_CHANNEL.test(channel))
      return {
        processing_channel_id:
          'processing_channel_id must be a processing channel id (pc_ and 26 characters)',
      };
    return {};
  }

  /** An authenticated `GET /payments/{id}` of a payment that cannot exist: 404 means the key works. */
  async verifyCredentials(credentials: Credentials): Promise<VerificationResult> {
    const answer = await this.call(credentials, 'GET', `/payments/${PROBE_PAYMENT}`);
    if (answer.ok || answer.status === 404) return { ok: true };
    if (answer.status === 401) return { ok: false, reason: 'Checkout.com refused the secret key (401)' };
    if (answer.status === 403) return { ok: false, reason: 'the secret key may not read payments (403)' };
    return { ok: false, reason: `Checkout.com answered ${answer.status}` };
  }

  async authorize(request: AuthorizeRequest): Promise<AuthorizeResult> {
    const stored = request.connectionToken;
    const cvcSent = request.cvc !== undefined && !request.networkToken && !stored;
    const returnUrl = vendorReturnUrl(this.settings.publicBaseUrl, request.reconciliationId);
    const body: Record<string, unknown> = {
      // The merchant's source at Checkout.com for the card (an `id` source, `src_…`), or the card.
      source: stored ? { type: 'id', id: stored.token } : checkoutSource(request),
      amount: request.amount,
      currency: request.currency,
      payment_type: request.paymentSource === 'recurring' ? 'Recurring' : 'Regular',
      ...(request.merchantInitiated ? { merchant_initiated: true } : {}),
      ...(request.previousSchemeTransactionId
        ? { previous_payment_id: request.previousSchemeTransactionId }
        : {}),
      reference: attemptReference(request),
      capture: request.intent === 'capture',
      // A network token's cryptogram is the cardholder's authentication: no 3-D Secure on top of it.
      '3ds': withCryptogram(networkTokenOf(request)) ? { enabled: false } : threeDsOf(request),
      success_url: returnUrl,
      failure_url: returnUrl,
      processing_channel_id: request.credentials.processing_channel_id ?? '',
    };
    const send = () =>
      this.call<CheckoutPayment>(request.credentials, 'POST', '/payments', {
        body,
        idempotencyKey: authorizeIdempotencyKey(request),
      });
    let answer: CheckoutAnswer<CheckoutPayment>;
    try {
      answer = await send();
    } catch (error) {
      // A 5xx answer: the same call again, with the same Cko-Idempotency-Key, is answered from the first
      // run when Checkout.com made the payment, and makes it once when it did not. Once only; a time-out
      // or a second failure is left to the webhook and the settlement job.
      if (!(error instanceof ProcessorAnswered5xx)) throw error;
      answer = await send();
    }
    if (!answer.ok) return authorizeRefused(answer.status, answer.error, cvcSent);
    return authorizeResult(answer.body, { cvcSent, capture: request.intent === 'capture' });
  }

  /** The buyer is back from Checkout.com's 3-D Secure page: the payment itself says how it ended. */
  async completeChallenge(request: ChallengeRequest): Promise<AuthorizeResult> {
    const declined: AuthorizeResult = {
      outcome: 'declined',
      captured: false,
      connectionTransactionId: request.connectionTransactionId || null,
      schemeTransactionId: null,
      authResponseCode: null,
      cvvResponseCode: 'not_provided',
      errorCode: 'three_d_secure_declined',
      threeDSecure: null,
    };
    const id = paymentId(request.connectionTransactionId);
    if (!id) return declined;
    const authorization = await this.authorizationOf(request.credentials, id);
    if (!authorization.ok)
      return { ...authorizeRefused(authorization.status, {}, false), connectionTransactionId: id };
    const action = authorization.action;
    // Still waiting for the buyer: the buyer left the page without authenticating.
    if (!action) return declined;
    if (action.reference !== undefined && action.reference !== attemptReference(request))
      return { ...declined, outcome: 'failed', errorCode: 'reference_mismatch' };
    if (action.approved !== true)
      return authorizeResult(
        { id, status: 'Declined', approved: false, response_code: action.response_code },
        { cvcSent: false, capture: false },
      );
    // Approved: the payment itself (its `scheme_id`); an authorized payment's details are unambiguous.
    const answer = await this.call<CheckoutPayment>(request.credentials, 'GET', `/payments/${id}`);
    const payment = answer.ok ? answer.body : { id, status: 'Authorized', approved: true };
    const result = authorizeResult(payment, { cvcSent: false, capture: request.intent === 'capture' });
    return result.outcome === 'approved'
      ? { ...result, threeDSecure: { version: '2.2.0', status: 'complete', method: 'challenge' } }
      : result;
  }

  /**
   * A payment's authorization action (`GET /payments/{id}/actions`), or none while it is pending. Its
   * actions rather than `GET /payments/{id}`, whose answer for a declined or pending payment is as much
   * a payout's as a payment's in Checkout.com's document (test/vendor-specs/README.md).
   */
  private async authorizationOf(
    credentials: Credentials,
    id: string,
  ): Promise<{ ok: true; action: CheckoutAction | undefined } | { ok: false; status: number }> {
    const answer = await this.call<CheckoutAction[]>(credentials, 'GET', `/payments/${id}/actions`);
    if (!answer.ok) return { ok: false, status: answer.status };
    const actions = Array.isArray(answer.body) ? answer.body : [];
    return {
      ok: true,
      action: actions.find((a) => a.type === 'Authorization' || a.type === 'Card Verification'),
    };
  }

  /** Checkout.com appends `cko-session-id` (`sid_…`) to the success and failure URLs. */
  returnMatches(params: Record<string, string>, connectionTransactionId: string | null): boolean {
    const session = params['cko-session-id'];
    return (
      typeof session === 'string' &&
      /^sid_\w{26}$/.test(session) &&
      paymentId(connectionTransactionId) !== null
    );
  }

  capture(request: CaptureRequest): Promise<OperationResult> {
    return this.action(
      request,
      'captures',
      { amount: request.amount, reference: checkoutCaptureReference(request.reconciliationId) },
      `${request.reconciliationId}:capture`,
    );
  }

  void(request: OperationRequest): Promise<OperationResult> {
    return this.action(
      request,
      'voids',
      { reference: checkoutVoidReference(request.reconciliationId) },
      `${request.reconciliationId}:void`,
    );
  }

  refund(request: RefundRequest): Promise<OperationResult> {
    return this.action(
      request,
      'refunds',
      {
        amount: request.amount,
        reference: checkoutRefundReference(request.reconciliationId, request.refundId),
      },
      `${request.reconciliationId}:refund:${toReconciliationId(request.refundId)}`,
    );
  }

  /**
   * Where an operation stands at Checkout.com: the payment (`GET /payments/{id}`) for an authorization,
   * its actions (`GET /payments/{id}/actions`, by our reference) for a capture, void or refund. An
   * operation not recorded there yet is pending for CHECKOUT_ACTION_WINDOW_MS, then counts as never
   * received. An authorization whose answer was lost has no payment id here, and Checkout.com's API (as
   * its document stands) has no look-up by reference: its webhook settles it; without one it counts as
   * never made when the settlement job reaches it (logged, docs/vendors.md).
   */
  async pollStatus(request: PollRequest): Promise<OperationResult | { status: 'not_found' }> {
    const id = paymentId(request.connectionTransactionId);
    if (!id || (request.operation === 'refund' && !request.refundId)) return { status: 'not_found' };
    // A refusal other than 404 (a key revoked meanwhile) says nothing of the payment: asked again later.
    if (request.operation === 'authorize') {
      const authorization = await this.authorizationOf(request.credentials, id);
      if (!authorization.ok)
        return authorization.status === 404 ? { status: 'not_found' } : { status: 'pending' };
      if (!authorization.action) return { status: 'pending' };
      return authorization.action.approved === true
        ? { status: 'succeeded', vendorId: id }
        : { status: 'failed', errorCode: 'declined' };
    }
    const actions = await this.call<CheckoutAction[]>(request.credentials, 'GET', `/payments/${id}/actions`);
    if (!actions.ok) return actions.status === 404 ? { status: 'not_found' } : { status: 'pending' };
    const wanted = this.actionOf(request);
    const found = (Array.isArray(actions.body) ? actions.body : []).find(
      (a) => a.type === wanted.type && a.reference === wanted.reference,
    );
    if (found)
      return found.approved === true
        ? { status: 'succeeded', ...(found.id ? { vendorId: found.id } : {}) }
        : { status: 'failed', errorCode: wanted.failure };
    const waited = request.now.getTime() - request.requestedAt.getTime();
    return waited < CHECKOUT_ACTION_WINDOW_MS ? { status: 'pending' } : { status: 'not_found' };
  }

  private actionOf(request: PollRequest): { type: string; reference: string; failure: string } {
    const id = request.reconciliationId;
    switch (request.operation) {
      case 'capture':
        return { type: 'Capture', reference: checkoutCaptureReference(id), failure: 'capture_failed' };
      case 'void':
        return { type: 'Void', reference: checkoutVoidReference(id), failure: 'void_failed' };
      default:
        return {
          type: 'Refund',
          reference: checkoutRefundReference(id, request.refundId!),
          failure: 'refund_failed',
        };
    }
  }

  /** A capture, void or refund: 202 is pending (its webhook or a look-up settles it); a 4xx fails it. */
  private async action(
    request: OperationRequest,
    kind: 'captures' | 'voids' | 'refunds',
    body: Record<string, unknown>,
    idempotencyKey: string,
  ): Promise<OperationResult> {
    const id = paymentId(request.connectionTransactionId);
    if (!id) return { status: 'failed', errorCode: 'checkout_not_found' };
    const answer = await this.call<{ action_id?: string }>(
      request.credentials,
      'POST',
      `/payments/${id}/${kind}`,
      {
        body,
        idempotencyKey,
      },
    );
    if (!answer.ok) return { status: 'failed', errorCode: errorCodeOf(answer.status, answer.error) };
    const actionId = typeof answer.body.action_id === 'string' ? answer.body.action_id : undefined;
    return { status: 'pending', ...(actionId ? { vendorId: actionId } : {}) };
  }
}
