import type { AuthorizeResult } from '../processors/processor.port';
import { intentOutcome, refundStatus, refusal, TransactionState, transition } from './transaction-state';

const now = new Date('2026-11-24T10:00:00Z');

const state = (overrides: Partial<TransactionState> = {}): TransactionState => ({
  status: 'processing',
  intent: 'authorize',
  amount: 1000,
  authorizedAmount: 0,
  cvvResponseCode: null,
  pendingOperation: 'authorize',
  pendingAmount: null,
  previousStatus: null,
  ...overrides,
});

const answer = (overrides: Partial<AuthorizeResult> = {}): AuthorizeResult => ({
  outcome: 'approved',
  captured: false,
  connectionTransactionId: 'ctx',
  schemeTransactionId: 'stx',
  authResponseCode: '00',
  cvvResponseCode: 'match',
  errorCode: null,
  threeDSecure: null,
  ...overrides,
});

describe('the transaction state machine', () => {
  it.each([
    [answer(), 'authorization_succeeded', 1000, 0],
    [answer({ captured: true }), 'capture_succeeded', 1000, 1000],
    [answer({ outcome: 'declined', errorCode: 'insufficient_funds' }), 'authorization_declined', 0, 0],
    [answer({ outcome: 'failed' }), 'authorization_failed', 0, 0],
    [answer({ outcome: 'challenge' }), 'buyer_approval_pending', 0, 0],
  ] as const)('an authorization answered %j becomes %s', (result, status, authorized, captured) => {
    const { from, patch } = transition(state(), { kind: 'authorized', result }, now);
    expect(from).toBe('processing');
    expect(patch).toMatchObject({ status, authorizedAmount: authorized, capturedAmount: captured });
    expect(patch.pending).toBeUndefined();
    expect(patch.approval).toBe(status === 'buyer_approval_pending' ? 'issue' : undefined);
  });

  it('holds an operation in processing and remembers where it came from', () => {
    const current = state({ status: 'authorization_succeeded', pendingOperation: null });
    expect(transition(current, { kind: 'begin', operation: 'capture', amount: 400 }, now)).toEqual({
      from: 'authorization_succeeded',
      patch: {
        status: 'processing',
        previousStatus: 'authorization_succeeded',
        pending: { operation: 'capture', since: now, amount: 400 },
      },
    });
  });

  it('maps captures and voids, including asynchronous and failed ones', () => {
    const s = state({ pendingOperation: 'capture', authorizedAmount: 1000 });
    expect(
      transition(s, { kind: 'captured', result: { status: 'succeeded' }, amount: 400 }, now).patch,
    ).toEqual({
      status: 'capture_succeeded',
      capturedAmount: 400,
      capturedAt: now,
      errorCode: null,
    });
    expect(
      transition(s, { kind: 'captured', result: { status: 'pending' }, amount: 400 }, now).patch,
    ).toEqual({
      status: 'capture_pending',
      pending: { operation: 'capture', since: now, amount: 400 },
    });
    expect(transition(s, { kind: 'captured', result: { status: 'failed' }, amount: 400 }, now).patch).toEqual(
      {
        status: 'authorization_succeeded',
        errorCode: 'capture_failed',
      },
    );
    expect(
      transition(s, { kind: 'voided', result: { status: 'failed', errorCode: 'x' } }, now).patch,
    ).toEqual({
      status: 'authorization_succeeded',
      errorCode: 'x',
    });
    expect(transition(s, { kind: 'voided', result: { status: 'pending' } }, now).patch.status).toBe(
      'authorization_void_pending',
    );
  });

  it('settles an interrupted authorization as the processor tells it', () => {
    const s = state({ intent: 'capture' });
    expect(transition(s, { kind: 'settled', result: { status: 'succeeded' } }, now).patch).toEqual({
      status: 'capture_succeeded',
      authorizedAmount: 1000,
      authorizedAt: now,
      capturedAmount: 1000,
      capturedAt: now,
    });
    expect(transition(s, { kind: 'settled', result: { status: 'failed' } }, now).patch).toEqual({
      status: 'authorization_declined',
      errorCode: 'declined',
    });
    expect(transition(s, { kind: 'settled', result: { status: 'not_found' } }, now).patch).toEqual({
      status: 'authorization_failed',
      errorCode: 'processor_timeout',
    });
  });

  it('returns an interrupted capture the processor never received to where it was', () => {
    const s = state({
      pendingOperation: 'capture',
      previousStatus: 'authorization_succeeded',
      authorizedAmount: 1000,
    });
    expect(transition(s, { kind: 'settled', result: { status: 'not_found' } }, now).patch).toMatchObject({
      status: 'authorization_succeeded',
      errorCode: 'processor_timeout',
    });
    const pending = state({ status: 'capture_pending', pendingOperation: 'capture', pendingAmount: 300 });
    expect(
      transition(pending, { kind: 'settled', result: { status: 'succeeded' } }, now).patch,
    ).toMatchObject({
      status: 'capture_succeeded',
      capturedAmount: 300,
    });
  });

  it('keeps the first CVC result through a challenge and ends the approval link', () => {
    const s = state({ pendingOperation: 'challenge', cvvResponseCode: 'match' });
    const { patch } = transition(
      s,
      { kind: 'challenge_completed', result: answer({ cvvResponseCode: 'not_provided' }) },
      now,
    );
    expect(patch).toMatchObject({
      status: 'authorization_succeeded',
      cvvResponseCode: 'match',
      approval: 'clear',
    });
    expect(
      transition(state({ status: 'buyer_approval_pending' }), { kind: 'approval_expired' }, now),
    ).toEqual({
      from: 'buyer_approval_pending',
      patch: { status: 'authorization_failed', errorCode: 'approval_expired', approval: 'clear' },
    });
  });

  it('refuses client operations from the wrong status, naming both', () => {
    expect(refusal({ status: 'authorization_succeeded' }, 'capture')).toBeNull();
    expect(refusal({ status: 'authorization_voided' }, 'capture')).toBe(
      'A transaction in status authorization_voided cannot be captured; it must be authorization_succeeded.',
    );
    expect(refusal({ status: 'authorization_succeeded' }, 'refund')).toMatch(/must be capture_succeeded/);
  });

  it('derives the intent outcome and refund statuses', () => {
    expect(intentOutcome({ status: 'authorization_voided', intent: 'authorize' })).toBe('succeeded');
    expect(intentOutcome({ status: 'authorization_succeeded', intent: 'capture' })).toBe('failed');
    expect(intentOutcome({ status: 'capture_pending', intent: 'capture' })).toBe('pending');
    expect(refundStatus({ status: 'pending' })).toBe('processing');
    expect(refundStatus({ status: 'not_found' })).toBe('failed');
  });
});
