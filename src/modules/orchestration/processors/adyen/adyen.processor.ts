import { toReconciliationId } from '../reconciliation';
import type {
  AuthorizeRequest,
  AuthorizeResult,
  CaptureRequest,
  ChallengeRequest,
  ConnectionToken,
  Credentials,
  OperationRequest,
  OperationResult,
  PollRequest,
  ProcessorPort,
  RefundRequest,
  VendorHooks,
  ThreeDSecureData,
  VendorSettings,
  VerificationResult,
} from '../processor.port';
import {
  attemptReference,
  authorizeIdempotencyKey,
  firstStoredCredentialPayment,
  vendorReturnUrl,
} from '../processor.port';
import {
  ADYEN_TIMEOUT_MS,
  AdyenConfigurationError,
  adyenBaseUrl,
  AdyenAnswer,
  adyenPost,
  LIVE_PREFIX,
} from './adyen-api';
import { HMAC_KEY_FORMAT } from './adyen-hmac';
import { networkTokenOf, withCryptogram } from '../network-token';
import { ADYEN_BRANDS, networkTokenMpiData, storedTokenInteraction } from './adyen-network-token';
import { AdyenPaymentResponse, authorizeRefused, authorizeResult, serviceErrorCode } from './adyen-results';

/** Adyen's answer to a capture, a cancel or a refund: `received`, confirmed later by notification. */
interface ModificationResponse {
  status?: string;
  pspReference?: string;
}

/**
 * Adyen's `shopperInteraction` and `recurringProcessingModel` for a payment source. The first payment of
 * a card on file or a subscription, made by the cardholder, is `Ecommerce` (the shopper is there and
 * gives the card, with its CVC when the token still holds one); the ones after it, and every
 * merchant-initiated one, are `ContAuth` (the card is on file; no CVC). `storePaymentMethod` is not sent:
 * the card is kept in this vault, not at Adyen (which stores nothing without a `shopperReference`).
 */
function interaction(request: AuthorizeRequest): Record<string, string> {
  if (request.paymentSource === 'ecommerce') return { shopperInteraction: 'Ecommerce' };
  const recurringProcessingModel =
    request.paymentSource === 'recurring'
      ? 'Subscription'
      : request.merchantInitiated
        ? 'UnscheduledCardOnFile'
        : 'CardOnFile';
  return {
    shopperInteraction: firstStoredCredentialPayment(request) ? 'Ecommerce' : 'ContAuth',
    recurringProcessingModel,
  };
}

/** A refund's merchant reference at Adyen: the transaction's reconciliation id and the refund's. */
export const adyenRefundReference = (reconciliationId: string, refundId: string): string =>
  `${reconciliationId}.${toReconciliationId(refundId)}`;

/** `three_d_secure_data` as Adyen's `mpiData`. */
function adyenMpiData(data: ThreeDSecureData): Record<string, string> {
  return {
    cavv: data.cavv,
    eci: data.eci,
    threeDSVersion: data.version,
    ...(data.dsTransactionId ? { dsTransID: data.dsTransactionId } : {}),
    ...(data.directoryResponse ? { directoryResponse: data.directoryResponse.toUpperCase() } : {}),
    ...(data.authenticationResponse
      ? { authenticationResponse: data.authenticationResponse.toUpperCase() }
      : {}),
  };
}

/**
 * A processor's token for the card (docs/buyers.md, "Connection tokens"): Adyen charges a stored payment
 * method (`paymentMethod.storedPaymentMethodId`) only with the `shopperReference` it was stored under, and
 * with the `recurringProcessingModel` and `ContAuth` of the payment (interaction()).
 */
function storedPaymentMethod(stored: ConnectionToken): Record<string, string> {
  return stored.customer ? { shopperReference: stored.customer } : {};
}

/** The merchant reference of a technical cancel (a cancel by our reference, without Adyen's). */
export const adyenTechnicalCancelReference = (reconciliationId: string): string =>
  `${reconciliationId}.cancel`;

/**
 * adyen-card against Adyen's Checkout API v71, over plain HTTP: the official
 * library's services are fixed to a later API version and host, while this adapter must speak v71 and
 * honour VENDOR_BASE_URLS. Authorizations answer synchronously; captures, cancels and refunds answer
 * `received` and are settled by Adyen's notifications (see AdyenNotificationsService), or marked
 * failed once VENDOR_NOTIFICATION_TIMEOUT_SECONDS passes without one. Every POST that moves money
 * carries an `Idempotency-Key` derived from the reconciliation id and the operation (at most 64
 * characters, Adyen's limit), and the reconciliation id is the payment's `reference`, so a call
 * repeated after a crash is answered by Adyen from its first run and every notification names the
 * transaction. Card data, CVCs and keys never leave this class except in the request to Adyen.
 */
export class AdyenProcessor implements ProcessorPort, VendorHooks {
  static readonly formula = 'adyen-card';
  readonly formulaId = AdyenProcessor.formula;
  readonly confirmsByNotification = true;
  /** How long a call may take (tests shorten it). */
  timeoutMs = ADYEN_TIMEOUT_MS;

  constructor(private readonly settings: VendorSettings) {}

  private post<T>(
    credentials: Credentials,
    path: string,
    body: Record<string, unknown>,
    idempotencyKey?: string,
  ): Promise<AdyenAnswer<T>> {
    return adyenPost<T>(
      adyenBaseUrl(this.settings.baseUrl, this.settings.environment, credentials),
      credentials,
      path,
      // Every request names the merchant account but `/payments/details` (whose schema refuses it).
      path === '/payments/details' ? body : { ...body, merchantAccount: credentials.merchant_account ?? '' },
      { idempotencyKey, timeoutMs: this.timeoutMs },
    );
  }

  /** An HMAC key must be hexadecimal (as the Customer Area shows it); a live connection needs its prefix. */
  checkFields(values: ReadonlyMap<string, string>): Record<string, string> {
    const problems: Record<string, string> = {};
    const hmac = values.get('hmac_key');
    if (hmac !== undefined && !HMAC_KEY_FORMAT.test(hmac))
      problems.hmac_key = 'hmac_key must be the hexadecimal HMAC key of the Adyen webhook (64 to 128 digits)';
    const prefix = values.get('live_endpoint_url_prefix');
    if (this.settings.environment === 'live' && !this.settings.baseUrl && !LIVE_PREFIX.test(prefix ?? ''))
      problems.live_endpoint_url_prefix =
        'a live adyen-card connection needs live_endpoint_url_prefix: letters, digits and dashes';
    return problems;
  }

  async verifyCredentials(credentials: Credentials): Promise<VerificationResult> {
    let answer: AdyenAnswer<unknown>;
    try {
      answer = await this.post(credentials, '/paymentMethods', {});
    } catch (error) {
      if (error instanceof AdyenConfigurationError) return { ok: false, reason: error.message };
      throw error;
    }
    if (answer.ok) return { ok: true };
    if (answer.status === 401) return { ok: false, reason: 'Adyen refused the API key (401)' };
    if (answer.status === 403)
      return { ok: false, reason: 'the API key may not use the merchant account (403)' };
    return { ok: false, reason: `Adyen answered ${answer.status} (${serviceErrorCode(answer.error)})` };
  }

  async authorize(request: AuthorizeRequest): Promise<AuthorizeResult> {
    const token = networkTokenOf(request);
    const stored = request.connectionToken;
    // A network token carries no CVC (its cryptogram stands for it), nor does a stored payment method.
    const cvcSent = request.cvc !== undefined && !token && !stored;
    const body: Record<string, unknown> = {
      amount: { value: request.amount, currency: request.currency },
      reference: attemptReference(request),
      returnUrl: vendorReturnUrl(this.settings.publicBaseUrl, request.reconciliationId),
      // The merchant's stored payment method at Adyen, under the shopper it was stored for; or the card.
      ...(stored ? storedPaymentMethod(stored) : {}),
      paymentMethod: stored
        ? { type: 'scheme', storedPaymentMethodId: stored.token }
        : {
            type: token ? 'networkToken' : 'scheme',
            number: request.card.number,
            expiryMonth: String(request.card.expiration_month).padStart(2, '0'),
            expiryYear: String(request.card.expiration_year),
            ...(token && ADYEN_BRANDS[token.scheme ?? ''] ? { brand: ADYEN_BRANDS[token.scheme ?? ''] } : {}),
            ...(cvcSent && !token ? { cvc: request.cvc } : {}),
            ...(request.previousSchemeTransactionId
              ? { networkPaymentReference: request.previousSchemeTransactionId }
              : {}),
          },
      ...(token && !withCryptogram(token) ? storedTokenInteraction(request) : interaction(request)),
      ...(request.intent === 'authorize'
        ? { additionalData: { manualCapture: 'true' } }
        : { captureDelayHours: 0 }),
      // 3-D Secure through Adyen's redirect page only: the approval page can send the buyer there. A
      // network token's cryptogram is the cardholder's authentication: no 3-D Secure on top of it.
      authenticationData:
        request.threeDSecureEnabled && !withCryptogram(token)
          ? { threeDSRequestData: { nativeThreeDS: 'disabled' } }
          : { attemptAuthentication: 'never' },
      ...(request.country ? { countryCode: request.country } : {}),
      // A network token's cryptogram, or a 3-D Secure authentication made elsewhere (Adyen's ThreeDSecureData).
      ...(withCryptogram(token)
        ? { mpiData: networkTokenMpiData(token) }
        : request.threeDSecureData
          ? { mpiData: adyenMpiData(request.threeDSecureData) }
          : {}),
    };
    const answer = await this.call<AdyenPaymentResponse>(
      request.credentials,
      '/payments',
      body,
      authorizeIdempotencyKey(request),
    );
    if (!answer.ok) return authorizeRefused(answer.error, cvcSent);
    return authorizeResult(answer.body, { cvcSent, capture: request.intent === 'capture' });
  }

  /** The buyer is back from Adyen's 3-D Secure page: `/payments/details` with what Adyen appended. */
  async completeChallenge(request: ChallengeRequest): Promise<AuthorizeResult> {
    const redirectResult = request.returnParams?.redirectResult;
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
    if (!redirectResult || !request.approved) return declined;
    const answer = await this.call<AdyenPaymentResponse>(
      request.credentials,
      '/payments/details',
      { details: { redirectResult } },
      `${request.reconciliationId}:details`,
    );
    if (!answer.ok) return { ...authorizeRefused(answer.error, false), connectionTransactionId: null };
    // A redirect result of another payment of the merchant account says nothing about this one.
    if (answer.body.merchantReference && answer.body.merchantReference !== attemptReference(request))
      return { ...declined, outcome: 'failed', errorCode: 'reference_mismatch' };
    const result = authorizeResult(answer.body, { cvcSent: false, capture: request.intent === 'capture' });
    if (result.outcome === 'challenge') return declined;
    return result.outcome === 'approved'
      ? { ...result, threeDSecure: { version: '2.2.0', status: 'complete', method: 'challenge' } }
      : result;
  }

  /** Adyen appends `redirectResult` to the return URL; whose payment it is, `/payments/details` tells. */
  returnMatches(params: Record<string, string>): boolean {
    const result = params.redirectResult;
    return typeof result === 'string' && result.length > 0 && result.length <= 20_000;
  }

  async capture(request: CaptureRequest): Promise<OperationResult> {
    return this.modification(
      request,
      `/payments/${encodeURIComponent(request.connectionTransactionId)}/captures`,
      {
        amount: { value: request.amount, currency: request.currency },
        reference: request.reconciliationId,
      },
      `${request.reconciliationId}:capture`,
    );
  }

  /** Cancels by Adyen's reference, or by ours (a technical cancel) when Adyen never named the payment. */
  async void(request: OperationRequest): Promise<OperationResult> {
    if (!request.connectionTransactionId) return this.technicalCancel(request);
    return this.modification(
      request,
      `/payments/${encodeURIComponent(request.connectionTransactionId)}/cancels`,
      { reference: request.reconciliationId },
      `${request.reconciliationId}:void`,
    );
  }

  async refund(request: RefundRequest): Promise<OperationResult> {
    const refundKey = toReconciliationId(request.refundId);
    return this.modification(
      request,
      `/payments/${encodeURIComponent(request.connectionTransactionId)}/refunds`,
      {
        amount: { value: request.amount, currency: request.currency },
        reference: adyenRefundReference(request.reconciliationId, request.refundId),
      },
      `${request.reconciliationId}:refund:${refundKey}`,
    );
  }

  /**
   * Adyen has no endpoint to ask where a payment stands: its notifications settle operations. An
   * operation still unconfirmed after VENDOR_NOTIFICATION_TIMEOUT_SECONDS is over: an authorization is
   * cancelled by our reference first (a technical cancel, so that nothing stays authorized unknown to
   * us) and counts as never made; a capture, cancel or refund counts as failed.
   */
  async pollStatus(request: PollRequest): Promise<OperationResult | { status: 'not_found' }> {
    if (request.now.getTime() - request.requestedAt.getTime() < this.settings.notificationTimeoutMs)
      return { status: 'pending' };
    if (request.operation !== 'authorize') return { status: 'failed', errorCode: 'notification_timeout' };
    const cancelled = await this.technicalCancel(request);
    return cancelled.status === 'failed' ? cancelled : { status: 'not_found' };
  }

  private technicalCancel(request: OperationRequest): Promise<OperationResult> {
    return this.modification(
      request,
      '/cancels',
      {
        paymentReference: attemptReference(request),
        reference: adyenTechnicalCancelReference(attemptReference(request)),
      },
      `${attemptReference(request)}:technical-cancel`,
    );
  }

  /** A capture, cancel or refund: `received` is pending (its notification settles it); a 4xx fails it. */
  private async modification(
    request: OperationRequest,
    path: string,
    body: Record<string, unknown>,
    idempotencyKey: string,
  ): Promise<OperationResult> {
    const answer = await this.call<ModificationResponse>(request.credentials, path, body, idempotencyKey);
    if (!answer.ok) return { status: 'failed', errorCode: serviceErrorCode(answer.error) };
    if (answer.body.status !== 'received') return { status: 'failed', errorCode: 'service_error' };
    return { status: 'pending', ...(answer.body.pspReference ? { vendorId: answer.body.pspReference } : {}) };
  }

  /** A call whose connection cannot be called as configured answers like a refusal (a 4xx). */
  private async call<T>(
    credentials: Credentials,
    path: string,
    body: Record<string, unknown>,
    idempotencyKey: string,
  ): Promise<AdyenAnswer<T>> {
    try {
      return await this.post<T>(credentials, path, body, idempotencyKey);
    } catch (error) {
      if (error instanceof AdyenConfigurationError)
        return { ok: false, status: 400, error: { errorCode: 'configuration' } };
      throw error;
    }
  }
}
