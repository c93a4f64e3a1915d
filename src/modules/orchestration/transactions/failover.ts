import type { AuthorizeResult } from '../processors/processor.port';

/** When a payment goes on to its next candidate connection, and what each attempt records (docs/routing.md). */

/** At most this many attempts per transaction. */
export const MAX_ATTEMPTS = 5;

/**
 * Whether an attempt's outcome certainly moved no money, so that the next candidate may be tried:
 * nothing reached the vendor (or it answered 429), a generic soft decline, or a processing error the
 * vendor stated (docs/routing.md). Every other outcome ends the transaction.
 */
export function retryable(result: AuthorizeResult): boolean {
  if (result.outcome === 'declined') return result.errorCode === 'declined';
  return (
    result.outcome === 'failed' &&
    (result.errorCode === 'processor_unavailable' || result.errorCode === 'service_error')
  );
}
