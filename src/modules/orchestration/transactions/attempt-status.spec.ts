import type { AuthorizeResult } from '../processors/processor.port';
import { answeredOutcome, followedOutcome } from './attempt-status';
import { transition, type TransactionState } from './transaction-state';

const answer = (outcome: AuthorizeResult['outcome'], captured = false): AuthorizeResult =>
  ({
    outcome,
    captured,
    errorCode: outcome === 'approved' ? null : 'declined',
    authResponseCode: '05',
    connectionTransactionId: 'pi_1',
  }) as AuthorizeResult;

const followed = (status: TransactionState['status']) =>
  followedOutcome({
    status,
    connection_id: 'c1',
    error_code: null,
    auth_response_code: null,
    connection_transaction_id: null,
  });

describe('an attempt status, from the vendor answer or from its transaction', () => {
  const processing = { status: 'processing', amount: 100, intent: 'authorize' } as TransactionState;

  it.each(['approved', 'declined', 'failed', 'challenge'] as const)(
    'a %s answer gives the attempt the status its transaction takes from the same answer',
    (outcome) => {
      for (const captured of [false, true]) {
        const result = answer(outcome, captured);
        const entered = transition(processing, { kind: 'authorized', result }, new Date()).patch.status;
        expect(answeredOutcome(result).status).toBe(followed(entered)?.status);
      }
    },
  );

  it('keeps what the vendor answered', () => {
    expect(answeredOutcome(answer('declined'))).toEqual({
      status: 'declined',
      errorCode: 'declined',
      authResponseCode: '05',
      connectionTransactionId: 'pi_1',
    });
  });

  it('gives none for a status that is no authorization outcome, or without a connection', () => {
    expect(followed('processing')).toBeUndefined();
    expect(followed('authorization_voided')).toBeUndefined();
    expect(
      followedOutcome({
        status: 'authorization_declined',
        connection_id: null,
        error_code: 'declined_by_rule',
        auth_response_code: null,
        connection_transaction_id: null,
      }),
    ).toBeUndefined();
  });
});
