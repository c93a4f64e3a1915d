import type { AuthorizeResult } from '../processors/processor.port';
import type { AttemptOutcome, AttemptStatus } from './attempts.repository';
import { authorizationStatus } from './transaction-state';
import type { TransactionStatus } from './transaction.dto';
import type { TransactionRow } from './transactions.repository';

/**
 * An attempt's status, computed here only: the status of the authorization outcome its transaction
 * takes. An attempt answered by its vendor and then failed over takes it from the answer (through the
 * status the answer would give the transaction); the last attempt follows its transaction whenever
 * that enters an authorization outcome (an answer, a completed challenge, a settlement). Any other
 * transaction status (a capture, a void, `processing`) gives its attempt none.
 */
const ATTEMPT_STATUS_OF: Partial<Record<TransactionStatus, AttemptStatus>> = {
  authorization_succeeded: 'succeeded',
  capture_succeeded: 'succeeded',
  authorization_declined: 'declined',
  authorization_failed: 'failed',
  buyer_approval_pending: 'buyer_approval_pending',
};

export const attemptStatusOf = (status: TransactionStatus): AttemptStatus | undefined =>
  ATTEMPT_STATUS_OF[status];

/** What an attempt records of its vendor's answer. */
export function answeredOutcome(result: AuthorizeResult): AttemptOutcome {
  return {
    status: attemptStatusOf(authorizationStatus(result.outcome))!,
    errorCode: result.errorCode,
    authResponseCode: result.authResponseCode,
    connectionTransactionId: result.connectionTransactionId,
  };
}

/** The outcome the last attempt takes from its transaction as stored, or none (see ATTEMPT_STATUS_OF). */
export function followedOutcome(
  row: Pick<
    TransactionRow,
    'status' | 'connection_id' | 'error_code' | 'auth_response_code' | 'connection_transaction_id'
  >,
): AttemptOutcome | undefined {
  const status = attemptStatusOf(row.status);
  if (!status || !row.connection_id) return undefined;
  return {
    status,
    errorCode: row.error_code,
    authResponseCode: row.auth_response_code,
    connectionTransactionId: row.connection_transaction_id,
  };
}
