import type { PaymentInitiation, PaymentSource } from './payment-initiation';

/**
 * The one interface between orchestration and a payment processor: what every processor implements,
 * the built-in sandboxes and the vendor adapters alike. A processor is one class implementing it (and
 * `VendorHooks` where the vendor needs them), registered for its formula id (processor.registry.ts);
 * nothing else changes. Implementations receive clear card data and credentials: they must never log them.
 */
export interface ProcessorPort {
  /** The formula (vendor) this processor serves, e.g. `stripe-card`. */
  readonly formulaId: string;
  /** `environment`: the vendor environment of the connection (vendor adapters only). */
  verifyCredentials(credentials: Credentials, environment?: 'test' | 'live'): Promise<VerificationResult>;
  authorize(request: AuthorizeRequest): Promise<AuthorizeResult>;
  /** Completes a 3-D Secure challenge the buyer approved or declined on the approval page. */
  completeChallenge(request: ChallengeRequest): Promise<AuthorizeResult>;
  capture(request: CaptureRequest): Promise<OperationResult>;
  void(request: OperationRequest): Promise<OperationResult>;
  refund(request: RefundRequest): Promise<OperationResult>;
  /** Where an operation stands at the vendor: used to settle asynchronous and interrupted operations. */
  pollStatus(request: PollRequest): Promise<OperationResult | { status: 'not_found' }>;
}

/**
 * Hooks that only some vendor adapters implement, each one optional: a caller checks that a processor
 * has a hook before it uses it, and a processor without it (every sandbox) behaves as described.
 */
export interface VendorHooks {
  /**
   * Vendors whose 3-D Secure challenges happen at the vendor: where the approval page sends the buyer
   * (the vendor's 3-D Secure page), or null when the vendor no longer awaits the buyer. The vendor
   * sends the buyer back to `vendorReturnUrl(publicBaseUrl, reconciliationId)`. Without it: no page.
   */
  challengeUrl?(request: OperationRequest): Promise<string | null>;
  /**
   * Vendors whose challenges happen at the vendor: whether what the vendor appended to the return URL
   * belongs to this payment (`connectionTransactionId`, null before the vendor named it). Without it,
   * no return is accepted.
   */
  returnMatches?(params: Record<string, string>, connectionTransactionId: string | null): boolean;
  /**
   * True for vendors that confirm operations by notification (Adyen): `pollStatus` then asks nothing
   * before VENDOR_NOTIFICATION_TIMEOUT_SECONDS, so the settlement job leaves such operations alone
   * until then, and the vendor's notifications settle them. Absent: false.
   */
  readonly confirmsByNotification?: boolean;
  /** What is wrong with a connection's field values, by field key (empty when nothing). Absent: nothing. */
  checkFields?(values: ReadonlyMap<string, string>): Record<string, string>;
}

/** A processor as the registry hands it out: the port, with whichever vendor hooks it implements. */
export type Processor = ProcessorPort & VendorHooks;

export type Credentials = Record<string, string>;

export interface VerificationResult {
  ok: boolean;
  /** Why the vendor refused the credentials (never the credentials themselves). */
  reason?: string;
}

export interface CardData {
  number: string;
  expiration_month: number;
  expiration_year: number;
}

export interface AuthorizeRequest {
  credentials: Credentials;
  /** The transaction's reconciliation id (its buyer's return URL is made of it). */
  reconciliationId: string;
  /** Which attempt of the transaction this is (1 to 5): its vendor reference and idempotency key name it. */
  attempt: number;
  amount: number;
  currency: string;
  country: string | null;
  intent: 'authorize' | 'capture';
  /** The card; for a network token, the device PAN (DPAN) and its expiry. */
  card: CardData;
  /** Present when the token is a `network_token`: `card` then holds the DPAN, sent in the rail's network-token form. */
  networkToken?: NetworkTokenDetails;
  /**
   * The processor's own token for the card at this connection (a merchant-initiated payment with a buyer's
   * stored card that carries one: docs/buyers.md), sent in the rail's stored form instead of the card,
   * which stays in `card` for processors that take none (the sandboxes). A secret: never logged.
   */
  connectionToken?: ConnectionToken;
  /**
   * Sent only with a payment the cardholder makes with the card at hand (`cardholderPresent`), and only
   * on the first authorization with the token.
   */
  cvc?: string;
  paymentSource: PaymentSource;
  merchantInitiated: boolean;
  isSubsequentPayment: boolean;
  previousSchemeTransactionId: string | null;
  /** A 3-D Secure authentication completed elsewhere. */
  threeDSessionId: string | null;
  /** The result of a 3-D Secure authentication made elsewhere, forwarded as it is (never stored, never logged). */
  threeDSecureData?: ThreeDSecureData;
  threeDSecureEnabled: boolean;
}

/** A processor's token for a card, and the processor's customer it belongs to (Stripe's, Adyen's shopper). */
export interface ConnectionToken {
  token: string;
  customer?: string;
}

/** A network token's facts besides its number and expiry (docs/wallets.md). */
export interface NetworkTokenDetails {
  /** Where it comes from: a decrypted Apple Pay or Google Pay payload, or the merchant's own network token. */
  source: 'apple_pay' | 'google_pay' | 'merchant';
  /**
   * The one-time cryptogram (base64 as the wallet gave it): sent on the first authorization with the token
   * only, then forgotten; absent afterwards and for merchant-initiated payments. Never logged.
   */
  cryptogram?: string;
  /** The electronic commerce indicator that goes with the cryptogram (two digits), when known. */
  eci?: string;
  /** The card scheme of the DPAN (`visa`, `mastercard`, `amex`, `discover`, ...), when known. */
  scheme: string | null;
}

/** `three_d_secure_data`: a 3-D Secure authentication the buyer passed elsewhere. */
export interface ThreeDSecureData {
  version: string;
  eci: string;
  cavv: string;
  directoryResponse?: string;
  authenticationResponse?: string;
  dsTransactionId?: string;
}

export interface ThreeDSecureResult {
  version: string;
  status: 'setup_error' | 'error' | 'declined' | 'cancelled' | 'complete';
  method: 'challenge' | 'frictionless';
  error_data?: {
    code: string;
    description: string;
    detail: Record<string, unknown>;
    component: Record<string, unknown>;
  };
}

export interface AuthorizeResult {
  /** `challenge`: the buyer must approve (3-D Secure) before the vendor decides. */
  outcome: 'approved' | 'declined' | 'failed' | 'challenge';
  /** With intent `capture`, an approval is captured at once. */
  captured: boolean;
  connectionTransactionId: string | null;
  schemeTransactionId: string | null;
  authResponseCode: string | null;
  cvvResponseCode: 'match' | 'no_match' | 'unavailable' | 'not_provided';
  errorCode: string | null;
  threeDSecure: ThreeDSecureResult | null;
  /** With outcome `challenge` at a vendor that gives no way to ask for it later: where the buyer goes. */
  vendorAction?: VendorAction;
}

/** A vendor's 3-D Secure page, where the approval page redirects the buyer (GET). */
export interface VendorAction {
  url: string;
}

export interface ChallengeRequest {
  credentials: Credentials;
  reconciliationId: string;
  /** The attempt whose challenge this is (its vendor reference). */
  attempt: number;
  connectionTransactionId: string;
  intent: 'authorize' | 'capture';
  approved: boolean;
  /** What the vendor appended to the return URL (query parameters), when the buyer came back from it. */
  returnParams?: Record<string, string>;
}

export interface OperationRequest {
  credentials: Credentials;
  reconciliationId: string;
  /** The transaction's last attempt, the one that authorized (or whose outcome is asked). */
  attempt: number;
  connectionTransactionId: string;
  /** The card's last four digits, which sandbox processors use to pick an outcome. */
  cardLast4: string;
}

export interface CaptureRequest extends OperationRequest {
  amount: number;
  currency: string;
}

export interface RefundRequest extends CaptureRequest {
  refundId: string;
  /** Why, in the caller's words (a relay refund's `reason`); an adapter sends it where its vendor has a field for it. */
  reason?: string;
}

export interface OperationResult {
  /** `pending`: the vendor completes asynchronously; poll later. */
  status: 'succeeded' | 'pending' | 'failed';
  /** The vendor's id for this operation (refund id, capture id), when it has one. */
  vendorId?: string;
  errorCode?: string;
}

export interface PollRequest extends OperationRequest {
  operation: 'authorize' | 'capture' | 'void' | 'refund';
  /** When the operation was sent (asynchronous sandbox operations settle some seconds later). */
  requestedAt: Date;
  /** Our refund's id, when the operation is a refund. */
  refundId?: string;
  amount: number;
  currency: string;
  /** The settlement job's clock. */
  now: Date;
}

/** What a vendor adapter is built from: where to send its calls, and where buyers come back to. */
export interface VendorSettings {
  /** The vendor environment this instance serves (one instance per environment). */
  environment: 'test' | 'live';
  /** VENDOR_BASE_URLS' entry for the formula, replacing the vendor's own base URL; undefined: the vendor's. */
  baseUrl: string | undefined;
  publicBaseUrl: string;
  /** VENDOR_NOTIFICATION_TIMEOUT_SECONDS in milliseconds. */
  notificationTimeoutMs: number;
}

/** Where a vendor sends the buyer back after its 3-D Secure page: under PUBLIC_BASE_URL. */
export const vendorReturnUrl = (publicBaseUrl: string, reconciliationId: string): string =>
  `${publicBaseUrl}/orchestration/approvals/return/${reconciliationId}`;

/**
 * The vendor's reference of an authorization attempt: the reconciliation id for the first, with `.a<n>`
 * from the second on, so that a notification or a search names the attempt it is about.
 */
export const attemptReference = (request: { reconciliationId: string; attempt: number }): string =>
  request.attempt > 1 ? `${request.reconciliationId}.a${request.attempt}` : request.reconciliationId;

/** The idempotency key of an attempt's authorizing call: `<id>:authorize`, then `<id>:authorize:<n>`. */
export const authorizeIdempotencyKey = (request: { reconciliationId: string; attempt: number }): string =>
  request.attempt > 1
    ? `${request.reconciliationId}:authorize:${request.attempt}`
    : `${request.reconciliationId}:authorize`;

export type { PaymentInitiation } from './payment-initiation';

/**
 * The first payment of a card on file or a subscription, made by the cardholder (customer-initiated, not
 * a subsequent one): the buyer is there and gives the card, as in an ecommerce payment, and it is the
 * payment the later merchant-initiated ones refer to.
 */
export const firstStoredCredentialPayment = (p: PaymentInitiation): boolean =>
  p.paymentSource !== 'ecommerce' && !p.merchantInitiated && !p.isSubsequentPayment;

/**
 * Whether the cardholder is there to give the card's CVC: an `ecommerce` payment, or the first payment of
 * a card on file or a subscription. A merchant-initiated or subsequent stored-credential payment goes
 * without it.
 */
export const cardholderPresent = (p: PaymentInitiation): boolean =>
  p.paymentSource === 'ecommerce' || firstStoredCredentialPayment(p);
