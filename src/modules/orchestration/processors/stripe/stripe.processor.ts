import Stripe from 'stripe';
import { ProcessorUnavailable } from '../processor-calls';
import { cvvCode, declineCode, latestCharge, refundResult, unanswered } from './stripe-results';
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
  VendorHooks,
  VendorSettings,
  VerificationResult,
} from '../processor.port';
import { attemptReference, authorizeIdempotencyKey, vendorReturnUrl } from '../processor.port';
import { networkTokenOf } from '../network-token';
import { cardOptions, merchantInitiation, storedPaymentMethod } from './stripe-params';

/** How long one call to Stripe may take before its outcome counts as unknown (left to settlement). */
export const STRIPE_TIMEOUT_MS = 20_000;

/**
 * stripe-card against Stripe's PaymentIntents API, through the official package.
 * One client per call (the merchant's secret key is the connection's); the package retries nothing
 * (`maxNetworkRetries: 0`): our idempotent requests and the settlement job handle failures. Every POST
 * carries an `Idempotency-Key` derived from the transaction's reconciliation id and the operation, so a
 * call repeated after a crash is answered by Stripe from its first run. Card data, CVCs and keys are
 * never logged: errors are reduced to Stripe's codes before they leave this class.
 */
export class StripeProcessor implements ProcessorPort, VendorHooks {
  static readonly formula = 'stripe-card';
  readonly formulaId = StripeProcessor.formula;
  private readonly endpoint: Pick<Stripe.StripeConfig, 'host' | 'port' | 'protocol'>;
  /** How long a call may take (tests shorten it). */
  timeoutMs = STRIPE_TIMEOUT_MS;

  constructor(private readonly settings: VendorSettings) {
    this.endpoint = {};
    if (settings.baseUrl) {
      const url = new URL(settings.baseUrl);
      if (url.pathname !== '/' || url.search)
        throw new Error(
          'VENDOR_BASE_URLS: the stripe-card base URL must have no path (Stripe paths start at /v1)',
        );
      this.endpoint = {
        host: url.hostname,
        port: url.port || (url.protocol === 'https:' ? 443 : 80),
        protocol: url.protocol === 'https:' ? 'https' : 'http',
      };
    }
  }

  private client(credentials: Credentials): Stripe {
    return new Stripe(credentials.secret_key ?? '', {
      ...this.endpoint,
      maxNetworkRetries: 0,
      timeout: this.timeoutMs,
      telemetry: false,
    });
  }

  async verifyCredentials(
    credentials: Credentials,
    environment?: 'test' | 'live',
  ): Promise<VerificationResult> {
    const mode = /^[sr]k_(test|live)_/.exec(credentials.secret_key ?? '')?.[1];
    if (!mode) return { ok: false, reason: 'secret_key is not a Stripe secret key (sk_test_… or sk_live_…)' };
    if (environment && mode !== environment)
      return {
        ok: false,
        reason: `secret_key is a ${mode} mode key; a ${environment} connection needs a ${environment} mode key (sk_${environment}_…)`,
      };
    try {
      await this.client(credentials).balance.retrieve();
      return { ok: true };
    } catch (error) {
      if (error instanceof Stripe.errors.StripeAuthenticationError)
        return { ok: false, reason: 'Stripe refused the secret key (401)' };
      if (error instanceof Stripe.errors.StripePermissionError)
        return { ok: false, reason: 'the secret key may not read the balance (403)' };
      if (error instanceof Stripe.errors.StripeError && error.statusCode && error.statusCode < 500)
        return { ok: false, reason: `Stripe answered ${error.statusCode} (${error.code ?? error.type})` };
      throw new ProcessorUnavailable('Stripe did not answer the credentials check');
    }
  }

  async authorize(request: AuthorizeRequest): Promise<AuthorizeResult> {
    const stripe = this.client(request.credentials);
    const token = networkTokenOf(request);
    const stored = request.connectionToken;
    const cvcSent = request.cvc !== undefined && !token && !stored;
    const card = {
      number: request.card.number,
      exp_month: request.card.expiration_month,
      exp_year: request.card.expiration_year,
      ...(cvcSent ? { cvc: request.cvc } : {}),
    };
    // The card, or the merchant's PaymentMethod at Stripe for it with the customer it is attached to.
    const instrument = stored ? storedPaymentMethod(stored) : { payment_method_data: { type: 'card', card } };
    // The attempt's own reference and key: an attempt retried is answered by Stripe from its first run,
    // and the next attempt is a new payment (docs/routing.md).
    const metadata = { reconciliation_id: attemptReference(request) };
    const idempotencyKey = authorizeIdempotencyKey(request);
    // A 3-D Secure challenge sends the buyer to the issuer, then back here (the approval page's return).
    const returnUrl = vendorReturnUrl(this.settings.publicBaseUrl, request.reconciliationId);
    try {
      if (request.amount === 0) {
        // A zero-amount authorization is a card check: Stripe does it as a confirmed SetupIntent.
        const setup = await stripe.setupIntents.create(
          {
            ...(instrument as Pick<Stripe.SetupIntentCreateParams, 'payment_method_data' | 'payment_method'>),
            return_url: returnUrl,
            confirm: true,
            usage: 'off_session',
            metadata,
          },
          { idempotencyKey },
        );
        return this.setupResult(setup, cvcSent);
      }
      const intent = await stripe.paymentIntents.create(
        {
          amount: request.amount,
          currency: request.currency.toLowerCase(),
          ...(instrument as Pick<Stripe.PaymentIntentCreateParams, 'payment_method_data' | 'payment_method'>),
          ...merchantInitiation(request, returnUrl),
          ...cardOptions(request, token),
          confirm: true,
          capture_method: request.intent === 'authorize' ? 'manual' : 'automatic',
          metadata,
          expand: ['latest_charge'],
        },
        { idempotencyKey },
      );
      return this.intentResult(intent, cvcSent);
    } catch (error) {
      return this.authorizeFailure(error, cvcSent);
    }
  }

  /** The buyer came back from the challenge: the PaymentIntent tells what the issuer decided. */
  async completeChallenge(request: ChallengeRequest): Promise<AuthorizeResult> {
    const stripe = this.client(request.credentials);
    try {
      const id = request.connectionTransactionId;
      const result = id.startsWith('seti_')
        ? this.setupResult(await stripe.setupIntents.retrieve(id), false)
        : this.intentResult(await stripe.paymentIntents.retrieve(id, { expand: ['latest_charge'] }), false);
      if (result.outcome === 'challenge' || !request.approved)
        return {
          ...result,
          outcome: 'declined',
          captured: false,
          errorCode: 'three_d_secure_declined',
        };
      return {
        ...result,
        threeDSecure: { version: '2.2.0', status: 'complete', method: 'challenge' },
      };
    } catch (error) {
      return this.authorizeFailure(error, false);
    }
  }

  async challengeUrl(request: OperationRequest): Promise<string | null> {
    const stripe = this.client(request.credentials);
    const id = request.connectionTransactionId;
    const next = id.startsWith('seti_')
      ? (await stripe.setupIntents.retrieve(id)).next_action
      : (await stripe.paymentIntents.retrieve(id)).next_action;
    return next?.redirect_to_url?.url ?? null;
  }

  /** Stripe appends the PaymentIntent's (or SetupIntent's) id to the return URL: it must be this payment's. */
  returnMatches(params: Record<string, string>, connectionTransactionId: string | null): boolean {
    const id = params.payment_intent ?? params.setup_intent;
    return typeof id === 'string' && id.length > 0 && id === connectionTransactionId;
  }

  async capture(request: CaptureRequest): Promise<OperationResult> {
    return this.operation(async (stripe) => {
      const intent = await stripe.paymentIntents.capture(
        request.connectionTransactionId,
        { amount_to_capture: request.amount },
        { idempotencyKey: `${request.reconciliationId}:capture` },
      );
      return intent.status === 'succeeded'
        ? { status: 'succeeded', vendorId: intent.id }
        : { status: 'failed', errorCode: 'capture_failed' };
    }, request);
  }

  async void(request: OperationRequest): Promise<OperationResult> {
    return this.operation(async (stripe) => {
      const intent = await stripe.paymentIntents.cancel(
        request.connectionTransactionId,
        {},
        { idempotencyKey: `${request.reconciliationId}:void` },
      );
      return intent.status === 'canceled'
        ? { status: 'succeeded' }
        : { status: 'failed', errorCode: 'void_failed' };
    }, request);
  }

  async refund(request: RefundRequest): Promise<OperationResult> {
    return this.operation(async (stripe) => {
      const refund = await stripe.refunds.create(
        {
          ...refundedPayment(request.connectionTransactionId),
          amount: request.amount,
          ...(isStripeReason(request.reason) ? { reason: request.reason } : {}),
          metadata: { reconciliation_id: request.reconciliationId, refund_id: request.refundId },
        },
        { idempotencyKey: `${request.reconciliationId}:refund:${request.refundId}` },
      );
      return refundResult(refund);
    }, request);
  }

  /**
   * Where an interrupted or unanswered operation stands at Stripe. An authorization whose answer never
   * came has no PaymentIntent id here: it is found by the reconciliation id in its metadata.
   */
  async pollStatus(request: PollRequest): Promise<OperationResult | { status: 'not_found' }> {
    const stripe = this.client(request.credentials);
    if (request.operation === 'refund') {
      if (!request.connectionTransactionId || !request.refundId) return { status: 'not_found' };
      const refunds = await stripe.refunds.list({
        ...refundedPayment(request.connectionTransactionId),
        limit: 100,
      });
      const refund = refunds.data.find((r) => r.metadata?.refund_id === request.refundId);
      return refund ? refundResult(refund) : { status: 'not_found' };
    }
    let intent: Stripe.PaymentIntent | undefined;
    if (request.connectionTransactionId) {
      intent = await stripe.paymentIntents.retrieve(request.connectionTransactionId);
    } else {
      const found = await stripe.paymentIntents.search({
        query: `metadata['reconciliation_id']:'${attemptReference(request)}'`,
      });
      intent = found.data[0];
    }
    if (!intent) return { status: 'not_found' };
    switch (request.operation) {
      case 'authorize':
        if (intent.status === 'requires_capture' || intent.status === 'succeeded')
          return { status: 'succeeded', vendorId: intent.id };
        if (intent.status === 'processing') return { status: 'pending' };
        return { status: 'failed', errorCode: 'declined' };
      case 'capture':
        if (intent.status === 'succeeded') return { status: 'succeeded', vendorId: intent.id };
        if (intent.status === 'requires_capture') return { status: 'not_found' };
        return { status: 'failed', errorCode: 'capture_failed' };
      case 'void':
        if (intent.status === 'canceled') return { status: 'succeeded' };
        if (intent.status === 'requires_capture') return { status: 'not_found' };
        return { status: 'failed', errorCode: 'void_failed' };
    }
  }

  private intentResult(intent: Stripe.PaymentIntent, cvcSent: boolean): AuthorizeResult {
    const charge = latestCharge(intent);
    const base: AuthorizeResult = {
      outcome: 'approved',
      captured: false,
      connectionTransactionId: intent.id,
      schemeTransactionId: charge?.payment_method_details?.card?.network_transaction_id ?? null,
      authResponseCode: null,
      cvvResponseCode: cvvCode(charge, cvcSent),
      errorCode: null,
      threeDSecure: null,
    };
    switch (intent.status) {
      case 'succeeded':
        return { ...base, captured: true };
      case 'requires_capture':
        return base;
      case 'requires_action':
        return { ...base, outcome: 'challenge', cvvResponseCode: cvcSent ? 'unavailable' : 'not_provided' };
      default: {
        const error = intent.last_payment_error;
        return {
          ...base,
          outcome: 'declined',
          schemeTransactionId: null,
          authResponseCode: error?.network_decline_code ?? null,
          errorCode: declineCode(error?.code, error?.decline_code),
        };
      }
    }
  }

  private setupResult(setup: Stripe.SetupIntent, cvcSent: boolean): AuthorizeResult {
    const base: AuthorizeResult = {
      outcome: 'approved',
      captured: false,
      connectionTransactionId: setup.id,
      schemeTransactionId: null,
      authResponseCode: null,
      cvvResponseCode: cvcSent ? 'unavailable' : 'not_provided',
      errorCode: null,
      threeDSecure: null,
    };
    if (setup.status === 'succeeded') return base;
    if (setup.status === 'requires_action') return { ...base, outcome: 'challenge' };
    const error = setup.last_setup_error;
    return { ...base, outcome: 'declined', errorCode: declineCode(error?.code, error?.decline_code) };
  }

  /**
   * A refused authorization: a card error is a decline with Stripe's codes; any other 4xx a failure
   * named by Stripe's code; no answer (time-out, 5xx, rate limit) leaves the outcome to settlement.
   */
  private authorizeFailure(error: unknown, cvcSent: boolean): AuthorizeResult {
    const stripeError = unanswered(error);
    const intent = stripeError.payment_intent;
    const base: AuthorizeResult = {
      outcome: 'failed',
      captured: false,
      connectionTransactionId: intent?.id ?? stripeError.setup_intent?.id ?? null,
      schemeTransactionId: null,
      authResponseCode: stripeError.network_decline_code ?? null,
      cvvResponseCode: cvcSent ? 'unavailable' : 'not_provided',
      errorCode: stripeError.code ?? 'invalid_request',
      threeDSecure: null,
    };
    if (stripeError instanceof Stripe.errors.StripeCardError) {
      if (stripeError.code === 'processing_error') return { ...base, errorCode: 'service_error' };
      const errorCode = declineCode(stripeError.code, stripeError.decline_code);
      return {
        ...base,
        outcome: 'declined',
        errorCode,
        cvvResponseCode: errorCode === 'incorrect_cvv' ? 'no_match' : base.cvvResponseCode,
      };
    }
    return base;
  }

  /** Runs a capture, void or refund: a 4xx is a failure named by Stripe's code; no answer is thrown on. */
  private async operation(
    work: (stripe: Stripe) => Promise<OperationResult>,
    request: OperationRequest,
  ): Promise<OperationResult> {
    try {
      return await work(this.client(request.credentials));
    } catch (error) {
      const stripeError = unanswered(error);
      return { status: 'failed', errorCode: stripeError.code ?? 'invalid_request' };
    }
  }
}

/**
 * What a refund names: a PaymentIntent (ours, or a relay refund's `pi_…`), or a charge (`ch_…`, `py_…`)
 * for a relay refund of a payment made at Stripe without one.
 */
function refundedPayment(id: string): { payment_intent: string } | { charge: string } {
  return /^(ch|py)_/.test(id) ? { charge: id } : { payment_intent: id };
}

/** Stripe's own refund reasons: a relay refund's `reason` that is one of them goes to Stripe as such. */
const isStripeReason = (reason: string | undefined): reason is Stripe.RefundCreateParams.Reason =>
  reason === 'duplicate' || reason === 'fraudulent' || reason === 'requested_by_customer';
