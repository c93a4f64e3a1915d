import type { AuthorizeResult, OperationResult } from '../processors/processor.port';
import type { TransactionStatus } from './transaction.dto';

/**
 * The transaction state machine, pure: given a transaction as it stands, what
 * happened to it (an operation begun, a processor's answer, a settlement, an expired approval) and the
 * time, it answers the next status and the columns that change. It reads no clock and writes nothing;
 * the services and the settlement job apply its answer with a conditional update (`from`).
 */

/** An operation that holds the transaction in `processing` while its processor is asked. */
export type PendingOperation = 'authorize' | 'capture' | 'void' | 'challenge';

/** What the state machine needs of a transaction. */
export interface TransactionState {
  status: TransactionStatus;
  intent: 'authorize' | 'capture';
  amount: number;
  authorizedAmount: number;
  cvvResponseCode: AuthorizeResult['cvvResponseCode'] | null;
  pendingOperation: PendingOperation | null;
  pendingAmount: number | null;
  previousStatus: TransactionStatus | null;
}

/** A processor's answer to an operation, or the processor not knowing it (asked by the settlement job). */
export type PollOutcome = OperationResult | { status: 'not_found' };

/** A processor's answer that settles an operation (a `pending` one settles nothing yet). */
export type FinalOutcome = (OperationResult & { status: 'succeeded' | 'failed' }) | { status: 'not_found' };

/** True when the processor's answer settles the operation. */
export const isFinal = (result: PollOutcome): result is FinalOutcome => result.status !== 'pending';

/**
 * The columns a transition changes. Absent: unchanged. `pending` is cleared by every transition that
 * does not set it (the operation it described is over), `previousStatus` likewise.
 */
export interface TransactionPatch {
  status: TransactionStatus;
  pending?: { operation: PendingOperation; since: Date; amount: number | null };
  previousStatus?: TransactionStatus;
  connectionTransactionId?: string | null;
  schemeTransactionId?: string | null;
  authResponseCode?: string | null;
  cvvResponseCode?: string | null;
  errorCode?: string | null;
  threeDSecure?: AuthorizeResult['threeDSecure'];
  authorizedAmount?: number;
  authorizedAt?: Date | null;
  capturedAmount?: number;
  capturedAt?: Date | null;
  voidedAt?: Date;
  /** `issue`: a buyer approval link is created (the service seals it); `clear`: the link stops working. */
  approval?: 'issue' | 'clear';
}

/** What happened, as the state machine sees it. */
export type TransactionEvent =
  | { kind: 'begin'; operation: Exclude<PendingOperation, 'authorize'>; amount: number | null }
  | { kind: 'authorized'; result: AuthorizeResult }
  | { kind: 'challenge_completed'; result: AuthorizeResult }
  | { kind: 'captured'; result: PollOutcome; amount: number }
  | { kind: 'voided'; result: PollOutcome }
  | { kind: 'settled'; result: FinalOutcome }
  | { kind: 'approval_expired' };

export interface Transition {
  /** The status the transaction must still be in for the patch to apply. */
  from: TransactionStatus;
  patch: TransactionPatch;
}

/** The status a client operation requires, and the verb its refusal names. */
export const REQUIRED_STATUS = {
  capture: { status: 'authorization_succeeded', verb: 'captured' },
  void: { status: 'authorization_succeeded', verb: 'voided' },
  refund: { status: 'capture_succeeded', verb: 'refunded' },
} as const satisfies Record<string, { status: TransactionStatus; verb: string }>;

export type ClientOperation = keyof typeof REQUIRED_STATUS;

/** Why a client operation cannot run on a transaction in its current status, or null when it can. */
export function refusal(
  current: Pick<TransactionState, 'status'>,
  operation: ClientOperation,
): string | null {
  const { status, verb } = REQUIRED_STATUS[operation];
  return current.status === status
    ? null
    : `A transaction in status ${current.status} cannot be ${verb}; it must be ${status}.`;
}

const AUTHORIZATION_STATUS: Record<AuthorizeResult['outcome'], TransactionStatus> = {
  challenge: 'buyer_approval_pending',
  declined: 'authorization_declined',
  failed: 'authorization_failed',
  approved: 'authorization_succeeded',
};

/** The status an authorization's answer gives its transaction (before any capture made with it). */
export const authorizationStatus = (outcome: AuthorizeResult['outcome']): TransactionStatus =>
  AUTHORIZATION_STATUS[outcome];

function authorization(current: TransactionState, result: AuthorizeResult, now: Date): TransactionPatch {
  const approved = result.outcome === 'approved';
  const captured = approved && result.captured;
  return {
    status: captured ? 'capture_succeeded' : authorizationStatus(result.outcome),
    connectionTransactionId: result.connectionTransactionId,
    schemeTransactionId: result.schemeTransactionId,
    authResponseCode: result.authResponseCode,
    cvvResponseCode: result.cvvResponseCode,
    errorCode: result.errorCode,
    threeDSecure: result.threeDSecure,
    authorizedAmount: approved ? current.amount : 0,
    authorizedAt: approved ? now : null,
    capturedAmount: captured ? current.amount : 0,
    capturedAt: captured ? now : null,
    ...(result.outcome === 'challenge' ? { approval: 'issue' as const } : {}),
  };
}

/** An operation's answer that did not complete it: back to an authorized transaction, with why. */
function unsuccessful(result: PollOutcome, fallbackCode: string): TransactionPatch {
  return {
    status: 'authorization_succeeded',
    errorCode: result.status === 'failed' ? (result.errorCode ?? fallbackCode) : 'processor_timeout',
  };
}

function capture(result: PollOutcome, amount: number, now: Date): TransactionPatch {
  switch (result.status) {
    case 'succeeded':
      return { status: 'capture_succeeded', capturedAmount: amount, capturedAt: now, errorCode: null };
    case 'pending':
      return { status: 'capture_pending', pending: { operation: 'capture', since: now, amount } };
    default:
      return unsuccessful(result, 'capture_failed');
  }
}

function voiding(result: PollOutcome, now: Date): TransactionPatch {
  switch (result.status) {
    case 'succeeded':
      return { status: 'authorization_voided', voidedAt: now, errorCode: null };
    case 'pending':
      return {
        status: 'authorization_void_pending',
        pending: { operation: 'void', since: now, amount: null },
      };
    default:
      return unsuccessful(result, 'void_failed');
  }
}

/**
 * An authorization the processor never answered (the process died first), as the processor tells it
 * now: charged, declined, or never received (nothing was charged).
 */
function settledAuthorization(current: TransactionState, result: FinalOutcome, now: Date): TransactionPatch {
  switch (result.status) {
    case 'succeeded': {
      const authorized = {
        authorizedAmount: current.amount,
        authorizedAt: now,
        // The vendor's id of the payment, when the answer that carried it was lost.
        ...(result.vendorId ? { connectionTransactionId: result.vendorId } : {}),
      };
      return current.intent === 'capture'
        ? { status: 'capture_succeeded', ...authorized, capturedAmount: current.amount, capturedAt: now }
        : { status: 'authorization_succeeded', ...authorized };
    }
    case 'failed':
      return { status: 'authorization_declined', errorCode: 'declined' };
    case 'not_found':
      return { status: 'authorization_failed', errorCode: 'processor_timeout' };
  }
}

/** The operation the settlement job asks the processor about (a challenge is an authorization). */
export function settlementOperation(current: TransactionState): 'authorize' | 'capture' | 'void' {
  const operation = current.pendingOperation ?? 'authorize';
  return operation === 'challenge' ? 'authorize' : operation;
}

function settlement(current: TransactionState, result: FinalOutcome, now: Date): TransactionPatch {
  const operation = settlementOperation(current);
  if (operation === 'authorize') return settledAuthorization(current, result, now);
  const patch =
    operation === 'capture'
      ? capture(result, current.pendingAmount ?? current.authorizedAmount, now)
      : voiding(result, now);
  // An interrupted capture or void the processor never received: the transaction is as it was before.
  if (current.status === 'processing' && result.status === 'not_found')
    patch.status = current.previousStatus ?? 'authorization_succeeded';
  return patch;
}

/** The next state of a transaction after an event. */
export function transition(current: TransactionState, event: TransactionEvent, now: Date): Transition {
  const from = current.status;
  switch (event.kind) {
    case 'begin':
      return {
        from,
        patch: {
          status: 'processing',
          previousStatus: current.status,
          pending: { operation: event.operation, since: now, amount: event.amount },
        },
      };
    case 'authorized':
      return { from, patch: authorization(current, event.result, now) };
    case 'challenge_completed':
      return {
        from,
        patch: {
          ...authorization(current, event.result, now),
          // The CVC was checked (or not) by the first authorization; the challenge does not change it.
          cvvResponseCode: current.cvvResponseCode,
          approval: 'clear',
        },
      };
    case 'captured':
      return { from, patch: capture(event.result, event.amount, now) };
    case 'voided':
      return { from, patch: voiding(event.result, now) };
    case 'settled':
      return { from, patch: settlement(current, event.result, now) };
    case 'approval_expired':
      return {
        from,
        patch: { status: 'authorization_failed', errorCode: 'approval_expired', approval: 'clear' },
      };
  }
}

/** The status a refund takes from its processor's answer. */
export function refundStatus(result: PollOutcome): 'succeeded' | 'processing' | 'failed' {
  if (result.status === 'succeeded') return 'succeeded';
  return result.status === 'pending' ? 'processing' : 'failed';
}

const PENDING: readonly TransactionStatus[] = ['processing', 'buyer_approval_pending', 'capture_pending'];
const AUTHORIZED: readonly TransactionStatus[] = [
  'authorization_succeeded',
  'capture_pending',
  'capture_succeeded',
  'authorization_void_pending',
  'authorization_voided',
];

/** Whether the transaction did what its intent asked: `succeeded`, `pending` or `failed`. */
export function intentOutcome(
  current: Pick<TransactionState, 'status' | 'intent'>,
): 'succeeded' | 'pending' | 'failed' {
  const succeeded =
    current.intent === 'capture'
      ? current.status === 'capture_succeeded'
      : AUTHORIZED.includes(current.status);
  if (succeeded) return 'succeeded';
  return PENDING.includes(current.status) ? 'pending' : 'failed';
}
