import { Injectable } from '@nestjs/common';
import type { AuditEntry } from '../../../common/audit/audit.types';
import type { EventType } from '../../../common/events/event-outbox';
import { Clock } from '../../../common/jobs/clock';
import { Metrics } from '../../../common/metrics/metrics';
import type { Change } from '../../../common/unit-of-work/change';
import type { UsableConnection } from '../connections/connections.service';
import type { OperationRequest } from '../processors/processor.port';
import { randomUUID } from 'node:crypto';
import { AttemptOutcome, AttemptsRepository } from './attempts.repository';
import { followedOutcome } from './attempt-status';
import { BuyersRepository } from '../buyers/buyers.repository';
import { toReconciliationId } from '../processors/reconciliation';
import { RefundRow, RefundsRepository, RefundStatus } from './refunds.repository';
import { transition as transitionOf, type Transition } from './transaction-state';
import type { TransactionStatus } from './transaction.dto';
import { transactionDto } from './transaction.mapper';
import {
  IssuedApproval,
  NewTransaction,
  stateOf,
  TransactionsRepository,
  TransactionRow,
} from './transactions.repository';

/** The statuses an authorization leaves, and those it enters when it succeeds. */
const AWAITING_AUTHORIZATION = new Set<TransactionStatus>(['processing', 'buyer_approval_pending']);
const AUTHORIZED = new Set<TransactionStatus>([
  'authorization_succeeded',
  'capture_pending',
  'capture_succeeded',
]);

/**
 * What requests, the approval page and the settlement job all do to a transaction: every write that
 * changes it (its creation, each state machine transition, a settled refund) with the event that
 * reports it (`transaction:created`, then `transaction:updated` for every change,
 * `data` the transaction as GET answers it then), added to the change that writes it; its audit rows
 * (attributed to the change's actor: the caller, the buyer, or the service for its jobs); the request
 * every processor operation starts from. Nothing else writes a transaction, so no change goes without
 * its event.
 */
@Injectable()
export class TransactionJournal {
  constructor(
    private readonly transactions: TransactionsRepository,
    private readonly refunds: RefundsRepository,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly attempts: AttemptsRepository,
    private readonly buyers: BuyersRepository,
  ) {}

  /**
   * Records a new transaction, `processing` its authorization with its first attempt at its connection
   * (one declined by a rule has neither), and its `transaction:created` event.
   */
  async insert(change: Change, t: NewTransaction): Promise<TransactionRow> {
    const first = t.connectionId && !t.declinedByRule;
    const row = await this.transactions.insert(change, first ? { ...t, firstAttemptId: randomUUID() } : t);
    this.emit(change, 'transaction:created', row);
    this.counted(change, row);
    return row;
  }

  /**
   * Failover: records how attempt `from` ended and moves the transaction, still `processing`, to its next
   * attempt at `connectionId` (`processing` too, before its vendor call). No event: attempts are not
   * (the transaction's status does not change). Undefined when the transaction was settled meanwhile.
   */
  async nextAttempt(
    change: Change,
    tenantId: string,
    id: string,
    from: number,
    outcome: AttemptOutcome,
    connectionId: string,
    now: Date,
  ): Promise<TransactionRow | undefined> {
    const row = await this.transactions.nextAttempt(change, tenantId, id, from, connectionId, now);
    if (!row) return undefined;
    await this.attempts.settle(change, tenantId, id, from, outcome, now);
    await this.attempts.begin(change, tenantId, id, from + 1, connectionId, randomUUID(), now);
    return row;
  }

  /**
   * Applies a state machine transition if the transaction is still in its `from` state (see
   * TransactionsRepository.apply), with its `transaction:updated` event. Answers the transaction as it
   * now stands, undefined when the transition did not apply (nothing changed, no event).
   */
  async apply(
    change: Change,
    tenantId: string,
    id: string,
    transition: Transition,
    now: Date,
    approval?: IssuedApproval,
  ): Promise<TransactionRow | undefined> {
    const row = await this.transactions.apply(change, tenantId, id, transition, now, approval);
    if (row) this.emit(change, 'transaction:updated', row);
    // The last attempt shows the authorization's outcome (a later capture or void leaves it as it is).
    const followed = row && followedOutcome(row);
    if (row && followed)
      await this.attempts.settle(change, row.tenant_id, row.id, row.attempt, followed, now);
    // A transition may only change columns (a pending operation's progress): no status entered.
    if (row && row.status !== transition.from) this.counted(change, row);
    // An authorization that succeeded: its card stored for its buyer if asked, and marked used. A card
    // stored is the buyer's change too: its own audit row, as storing it directly writes (no card data).
    if (row && AWAITING_AUTHORIZATION.has(transition.from) && AUTHORIZED.has(row.status)) {
      const stored = await this.buyers.used(
        change,
        row.tenant_id,
        row.token_id,
        row.buyer_id,
        row.store_payment_method,
        now,
      );
      if (stored && row.buyer_id)
        change.audit({
          entityType: 'buyer',
          entityId: row.buyer_id,
          operation: 'update',
          message: `Payment method stored by transaction ${row.id}`,
        });
    }
    return row;
  }

  /** `vault_transactions_total`: the status entered, once its change has committed. */
  private counted(change: Change, row: TransactionRow): void {
    const status = row.status;
    change.afterCommit(() => this.metrics.transactionEntered(status));
  }

  /**
   * The event's `data` is the transaction as GET answers it, but for `payment_method.approval_url`,
   * always null: the link is a bearer credential of the buyer, kept only sealed and digested at rest,
   * and an event is stored in clear and sent to another party. A receiver seeing
   * `buyer_approval_pending` GETs the transaction for it. The card's fingerprint is in, as in `token:*`
   * events: events go only to the endpoints the tenant's management keys configured (webhooks are theirs
   * alone), never to the key that made the change.
   */
  private emit(change: Change, type: EventType, row: TransactionRow): void {
    change.emit({
      tenantId: row.tenant_id,
      type,
      entityId: row.id,
      data: transactionDto(row, null, true),
    });
  }

  /** An audit row of the transaction, written with the change (by its actor). */
  /**
   * The buyer did not approve in time: the transaction fails (`approval_expired`), with its audit row.
   * False when it had moved on meanwhile. Used by the approval page and by settlement.
   */
  async expireApproval(change: Change, row: TransactionRow, now: Date): Promise<boolean> {
    const expired = transitionOf(stateOf(row), { kind: 'approval_expired' }, now);
    const applied = !!(await this.apply(change, row.tenant_id, row.id, expired, now));
    if (applied) this.log(change, row.id, 'update', 'Buyer approval expired: authorization_failed');
    return applied;
  }

  log(change: Change, id: string, operation: AuditEntry['operation'], message: string): void {
    change.audit({ entityType: 'transaction', entityId: id, operation, message });
  }

  reconciliationId(id: string): string {
    return toReconciliationId(id);
  }

  operationRequest(row: TransactionRow, connection: UsableConnection): OperationRequest {
    return {
      credentials: connection.credentials,
      reconciliationId: toReconciliationId(row.id),
      attempt: row.attempt,
      connectionTransactionId: row.connection_transaction_id ?? '',
      cardLast4: row.payment_method.label,
    };
  }

  /**
   * Records a refund's outcome once (a request and the job never both settle it); a succeeded refund
   * adds to its transaction's refunded amount, a `transaction:updated` event. A refund requested, or
   * one that failed, leaves the transaction as it was: no event (there is no refund event type; the
   * refund's own object answers the request that made it). Answers the refund as it now stands.
   */
  async settleRefund(
    change: Change,
    refund: RefundRow,
    status: RefundStatus,
    vendorId: string | null,
  ): Promise<RefundRow> {
    const now = this.clock.now();
    const settled = await this.refunds.settle(change, refund, { status, vendorId }, now);
    if (settled && status === 'succeeded')
      this.emit(
        change,
        'transaction:updated',
        await this.transactions.addRefunded(
          change,
          refund.tenant_id,
          refund.transaction_id,
          refund.amount,
          now,
        ),
      );
    return settled ?? refund;
  }
}
