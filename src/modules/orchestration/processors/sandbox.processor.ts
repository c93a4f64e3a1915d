import { randomInt, randomUUID } from 'node:crypto';
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
  VerificationResult,
} from './processor.port';
import { attemptReference } from './processor.port';

const ALNUM = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const LOWER = '0123456789abcdefghijklmnopqrstuvwxyz';
const UPPER = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const DIGITS = '0123456789';
const HEX = '0123456789abcdef';

/** `n` characters drawn uniformly from `alphabet` (rejection-free: randomInt is unbiased). */
export function randomChars(alphabet: string, n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

export const ids = {
  alnum: (n: number) => randomChars(ALNUM, n),
  lower: (n: number) => randomChars(LOWER, n),
  upper: (n: number) => randomChars(UPPER, n),
  digits: (n: number) => randomChars(DIGITS, n).replace(/^0/, '1'),
  hex: (n: number) => randomChars(HEX, n),
  uuid: () => randomUUID(),
};

/** How long an asynchronous sandbox operation (card 4000000000000259) takes to complete. */
export const SANDBOX_ASYNC_MS = 2_000;

const ASYNC_CARD_LAST4 = '0259';

/** What the sandbox decides for a test card number. */
interface CardBehaviour {
  decline?: { errorCode: string; authResponseCode: string };
  failure?: string;
  cvvCheckFails?: boolean;
  challenge?: boolean;
  threeDSecureError?: boolean;
}

const TEST_CARDS: Record<string, CardBehaviour> = {
  '4000000000000002': { decline: { errorCode: 'declined', authResponseCode: '05' } },
  '4000000000009995': { decline: { errorCode: 'insufficient_funds', authResponseCode: '51' } },
  '4000000000000069': { decline: { errorCode: 'expired_card', authResponseCode: '54' } },
  '4000000000000127': { cvvCheckFails: true },
  '4000000000000119': { failure: 'service_error' },
  '4000000000003220': { challenge: true },
  '4000000000003063': { threeDSecureError: true },
};

/**
 * A vendor's test mode: every formula processes through one of these unless a live integration is
 * registered for it. Outcomes follow the test card table; ids look like the vendor's.
 */
export abstract class SandboxProcessor implements ProcessorPort {
  abstract readonly formulaId: string;
  /** An id in the vendor's format for a payment. */
  protected abstract transactionId(): string;
  /** An id in the vendor's format for a refund. */
  protected abstract refundId(): string;

  verifyCredentials(credentials: Credentials): Promise<VerificationResult> {
    const rejected = Object.entries(credentials).find(([, value]) => value.toLowerCase().includes('invalid'));
    return Promise.resolve(
      rejected ? { ok: false, reason: `the vendor rejected the value of ${rejected[0]}` } : { ok: true },
    );
  }

  authorize(request: AuthorizeRequest): Promise<AuthorizeResult> {
    const behaviour = TEST_CARDS[request.card.number] ?? {};
    const cvv = request.cvc === undefined ? 'not_provided' : 'match';
    const base: AuthorizeResult = {
      outcome: 'approved',
      captured: false,
      connectionTransactionId: this.transactionId(),
      schemeTransactionId: ids.digits(15),
      authResponseCode: '00',
      cvvResponseCode: cvv,
      errorCode: null,
      threeDSecure:
        (request.threeDSessionId ?? request.threeDSecureData)
          ? {
              version: request.threeDSecureData?.version ?? '2.2.0',
              status: 'complete',
              method: 'frictionless',
            }
          : null,
    };
    let result: AuthorizeResult = base;
    if (behaviour.decline) {
      result = {
        ...base,
        outcome: 'declined',
        errorCode: behaviour.decline.errorCode,
        authResponseCode: behaviour.decline.authResponseCode,
        schemeTransactionId: null,
      };
    } else if (behaviour.failure) {
      result = {
        ...base,
        outcome: 'failed',
        errorCode: behaviour.failure,
        authResponseCode: null,
        schemeTransactionId: null,
      };
    } else if (behaviour.cvvCheckFails && request.cvc !== undefined) {
      result = {
        ...base,
        outcome: 'declined',
        errorCode: 'incorrect_cvv',
        authResponseCode: 'N7',
        cvvResponseCode: 'no_match',
        schemeTransactionId: null,
      };
    } else if (behaviour.threeDSecureError) {
      result = {
        ...base,
        outcome: 'failed',
        errorCode: 'three_d_secure_failed',
        authResponseCode: null,
        schemeTransactionId: null,
        threeDSecure: {
          version: '2.2.0',
          status: 'error',
          method: 'challenge',
          error_data: {
            code: '305',
            description: 'Cardholder authentication could not be performed',
            detail: { acs_transaction_id: ids.uuid() },
            component: { name: 'access_control_server' },
          },
        },
      };
    } else if (behaviour.challenge && !(request.threeDSessionId ?? request.threeDSecureData)) {
      result = { ...base, outcome: 'challenge', authResponseCode: null, schemeTransactionId: null };
    }
    if (result.outcome === 'approved') result.captured = request.intent === 'capture';
    if (result.outcome !== 'challenge')
      this.remember(
        attemptReference(request),
        'authorize',
        result.outcome === 'approved' ? 'succeeded' : 'failed',
      );
    return Promise.resolve(result);
  }

  completeChallenge(request: ChallengeRequest): Promise<AuthorizeResult> {
    const threeDSecure = {
      version: '2.2.0',
      status: request.approved ? 'complete' : 'declined',
      method: 'challenge',
    } as const;
    return Promise.resolve({
      outcome: request.approved ? 'approved' : 'declined',
      captured: request.approved && request.intent === 'capture',
      connectionTransactionId: request.connectionTransactionId,
      schemeTransactionId: request.approved ? ids.digits(15) : null,
      authResponseCode: request.approved ? '00' : '05',
      cvvResponseCode: 'not_provided',
      errorCode: request.approved ? null : 'three_d_secure_declined',
      threeDSecure,
    });
  }

  capture(request: CaptureRequest): Promise<OperationResult> {
    this.remember(request.reconciliationId, 'capture', 'succeeded');
    return Promise.resolve({
      status: this.isAsync(request) ? 'pending' : 'succeeded',
      vendorId: this.transactionId(),
    });
  }

  void(request: OperationRequest): Promise<OperationResult> {
    this.remember(request.reconciliationId, 'void', 'succeeded');
    return Promise.resolve({ status: this.isAsync(request) ? 'pending' : 'succeeded' });
  }

  refund(request: RefundRequest): Promise<OperationResult> {
    this.remember(request.reconciliationId, `refund:${request.refundId}`, 'succeeded');
    return Promise.resolve({ status: 'succeeded', vendorId: this.refundId() });
  }

  /**
   * What the sandbox did for a payment, as a vendor's status endpoint says: an asynchronous capture or
   * void completes SANDBOX_ASYNC_MS after it was sent; other operations are answered from the sandbox's
   * memory of what it performed (kept in this process only, unlike a vendor's); an operation it never
   * received (the caller died before sending it) is `not_found`.
   */
  pollStatus(request: PollRequest): Promise<OperationResult | { status: 'not_found' }> {
    if ((request.operation === 'capture' || request.operation === 'void') && this.isAsync(request)) {
      const done = Date.now() - request.requestedAt.getTime() >= SANDBOX_ASYNC_MS;
      return Promise.resolve({ status: done ? 'succeeded' : 'pending' });
    }
    // An authorization is remembered by its attempt; the operations after it by the transaction.
    const reference =
      request.operation === 'authorize' ? attemptReference(request) : request.reconciliationId;
    // A refund is remembered by its own id (a transaction may have several).
    const operation =
      request.operation === 'refund' && request.refundId ? `refund:${request.refundId}` : request.operation;
    const performed = this.performed.get(`${reference}:${operation}`);
    return Promise.resolve(performed ? { status: performed } : { status: 'not_found' });
  }

  private readonly performed = new Map<string, 'succeeded' | 'failed'>();

  private remember(reconciliationId: string, operation: string, status: 'succeeded' | 'failed'): void {
    if (this.performed.size >= 100_000) this.performed.delete(this.performed.keys().next().value!);
    this.performed.set(`${reconciliationId}:${operation}`, status);
  }

  private isAsync(request: OperationRequest): boolean {
    return request.cardLast4 === ASYNC_CARD_LAST4;
  }
}
