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
