import type { AuthorizeResult, OperationResult } from './processor.port';

/** A processor call that has not answered by then counts as failed. */
export const PROCESSOR_TIMEOUT_MS = 30_000;

/** The call, or a rejection once `PROCESSOR_TIMEOUT_MS` has passed without an answer. */
export function withTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('processor timeout')), PROCESSOR_TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Thrown by a vendor adapter when the vendor's answer is unknown (a time-out, a dropped connection, a
 * 5xx): the vendor may have performed the operation, so it is not a failure. The transaction stays
 * `processing` (a refund `processing`) and the settlement job asks the vendor later.
 */
export class ProcessorUnavailable extends Error {
  constructor(reason: string) {
    super(`processor unavailable: ${reason}`);
    this.name = 'ProcessorUnavailable';
  }
}

/**
 * Thrown by a vendor adapter when the call certainly did not reach the vendor, or the vendor refused it
 * unprocessed: the connection could not be opened (refused, DNS, TLS) or the vendor answered HTTP 429.
 * Nothing was done, so a payment may be tried at another connection (failover). Where that difference
 * does not matter it is handled as the ProcessorUnavailable it also is (left to settlement: safe).
 */
export class ProcessorUnreachable extends ProcessorUnavailable {
  constructor(reason: string) {
    super(reason);
    this.name = 'ProcessorUnreachable';
  }
}

/** Error codes of a network failure before anything was sent: the vendor cannot have acted. */
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Whether a network error (or its cause) says the connection was never opened: nothing was sent. */
export function neverSent(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_SENT.has(code)) return true;
    e = (e as { cause?: unknown; detail?: unknown }).cause ?? (e as { detail?: unknown }).detail;
  }
  return false;
}

/** What an authorization that the processor did not answer (an error, a time-out) counts as. */
export function processorFailure(
  connectionTransactionId: string | null,
  cvvResponseCode: AuthorizeResult['cvvResponseCode'],
): AuthorizeResult {
  return {
    outcome: 'failed',
    captured: false,
    connectionTransactionId,
    schemeTransactionId: null,
    authResponseCode: null,
    cvvResponseCode,
    errorCode: 'processor_error',
    threeDSecure: null,
  };
}

/** What an operation (capture, void, refund) the processor did not answer counts as. */
export const OPERATION_FAILURE: OperationResult = { status: 'failed', errorCode: 'processor_error' };
