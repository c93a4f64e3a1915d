import { Injectable, Logger } from '@nestjs/common';
import { unauthorized } from '../../../common/errors/problem.exception';
import { Clock } from '../../../common/jobs/clock';
import { systemOrigin } from '../../../common/unit-of-work/change';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { ConnectionsService, UsableConnection } from '../connections/connections.service';
import { CheckoutProcessor } from '../processors/checkout/checkout.processor';
import { paymentId } from '../processors/checkout/checkout-results';
import { checkoutSignatureValid } from '../processors/checkout/checkout-signature';
import { fromReconciliationId, toReconciliationId } from '../processors/reconciliation';
import { RelayNotifications } from '../relay/relay-notifications';
import { RefundsRepository } from '../transactions/refunds.repository';
import { TransactionJournal } from '../transactions/transaction-journal';
import { FinalOutcome, settlementOperation, transition } from '../transactions/transaction-state';
import { stateOf, TransactionRow, TransactionsRepository } from '../transactions/transactions.repository';

/** A webhook event of Checkout.com, as far as it is read here. */
interface CheckoutEvent {
  type?: unknown;
  data?: { id?: unknown; action_id?: unknown; reference?: unknown };
}

/** What an event's reference names: the transaction (its attempt) and, for a refund, the refund's key. */
interface Target {
  type: string;
  row: TransactionRow;
  connection: UsableConnection;
  paymentId: string | null;
  actionId: string | null;
  suffix: string | null;
}

/** Our references: the reconciliation id, `.a<n>` for attempt n > 1, then `.capture`, `.void` or a refund's key. */
const REFERENCE = /^([0-9A-Za-z]{1,22})(?:\.a([2-5]))?(?:\.([0-9A-Za-z]{1,22}))?$/;

/** The events settled here; any other is accepted and ignored. */
const EVENTS = new Set([
  'payment_approved',
  'payment_declined',
  'payment_captured',
  'payment_capture_declined',
  'payment_voided',
  'payment_refunded',
  'payment_refund_declined',
]);

/** Why an event is refused: a fixed reason, never a value from the request. */
const REFUSED = 'The notification could not be verified.';

/**
 * Checkout.com's webhooks at `POST /orchestration/notifications/checkout`. The event's `data.reference`
 * is one of ours (a transaction's reconciliation id, with its attempt, a capture's, void's or refund's
 * suffix), so the transaction, its connection and that connection's `webhook_secret` are found first;
 * the `Cko-Signature` header must be the HMAC-SHA256 of the raw body under that secret, else 401 and
 * nothing changes. Events about payments made elsewhere are accepted and ignored. Applying is
 * idempotent: each change is a state machine transition from the state the operation left, so an
 * event sent again finds it settled and changes nothing.
 */
@Injectable()
export class CheckoutNotificationsService {
  private readonly logger = new Logger('CheckoutNotifications');

  constructor(
    private readonly transactions: TransactionsRepository,
    private readonly refunds: RefundsRepository,
    private readonly journal: TransactionJournal,
    private readonly connections: ConnectionsService,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
    private readonly relays: RelayNotifications,
  ) {}

  async receive(raw: unknown, signature: unknown): Promise<void> {
    if (!Buffer.isBuffer(raw) || typeof signature !== 'string') throw unauthorized(REFUSED);
    let event: CheckoutEvent;
    try {
      event = JSON.parse(raw.toString('utf8')) as CheckoutEvent;
    } catch {
      throw unauthorized(REFUSED);
    }
    if (!event || typeof event !== 'object') throw unauthorized(REFUSED);
    const target = await this.targetOf(event);
    if (!target) return this.receiveRelay(event, raw, signature);
    if (!checkoutSignatureValid(raw, signature, target.connection.credentials.webhook_secret ?? '')) {
      this.logger.warn(
        { transaction_id: target.row.id, event_type: target.type },
        'a Checkout.com webhook failed its signature check; refused',
      );
      throw unauthorized(REFUSED);
    }
    await this.apply(target);
  }

  /**
   * An event about a relay refund (a payment made before the migration), verified with the relay refund's
   * connection: `payment_refunded` and `payment_refund_declined` of its payment settle it.
   */
  private async receiveRelay(event: CheckoutEvent, raw: Buffer, signature: string): Promise<void> {
    const type = event.type;
    if (type !== 'payment_refunded' && type !== 'payment_refund_declined') return;
    const target = await this.relays.find(event.data?.reference, CheckoutProcessor.formula);
    if (!target) return;
    if (!checkoutSignatureValid(raw, signature, target.connection.credentials.webhook_secret ?? '')) {
      this.logger.warn(
        { relay_refund_id: target.relay.id, event_type: type },
        'a Checkout.com webhook failed its signature check; refused',
      );
      throw unauthorized(REFUSED);
    }
    if (paymentId(event.data?.id) !== target.relay.vendor_payment_id) return;
    const action = event.data?.action_id;
    await this.relays.settle(
      target,
      type === 'payment_refunded',
      typeof action === 'string' && /^act_\w{26}$/.test(action) ? action : null,
      `Checkout.com webhook ${type}`,
    );
  }

  /** The transaction an event is about, when it is one of ours on a checkout-card vendor connection. */
  private async targetOf(event: CheckoutEvent): Promise<Target | undefined> {
    const type = typeof event.type === 'string' && EVENTS.has(event.type) ? event.type : undefined;
    const reference = event.data?.reference;
    const match = REFERENCE.exec(typeof reference === 'string' ? reference : '');
    if (!type || !match) return undefined;
    let id: string;
    try {
      id = fromReconciliationId(match[1]);
    } catch {
      return undefined;
    }
    const row = await this.transactions.findForNotification(id);
    if (!row) return undefined;
    const connection = await this.connections.loadForPayment(row.tenant_id, row.connection_id, true);
    if (
      !connection ||
      connection.row.formulaId !== CheckoutProcessor.formula ||
      connection.row.environment === 'sandbox'
    )
      return undefined;
    const suffix = match[3] ?? null;
    const attempt = match[2] ? Number(match[2]) : 1;
    const aboutAttempt = type === 'payment_approved' || type === 'payment_declined';
    if (aboutAttempt ? attempt !== row.attempt || suffix !== null : match[2] !== undefined) {
      this.logger.log(
        { transaction_id: row.id },
        'a Checkout.com webhook about an earlier attempt is ignored',
      );
      return undefined;
    }
    const action = event.data?.action_id;
    return {
      type,
      row,
      connection,
      paymentId: paymentId(event.data?.id),
      actionId: typeof action === 'string' && /^act_\w{26}$/.test(action) ? action : null,
      suffix,
    };
  }

  private async apply(target: Target): Promise<void> {
    const { row } = target;
    // A payment other than the one this transaction holds (when it holds one) is not about it.
    if (row.connection_transaction_id && target.paymentId !== row.connection_transaction_id) return;
    switch (target.type) {
      case 'payment_approved':
        // Its answer was lost and no webhook came before the settlement job counted it as never made.
        if (row.status === 'authorization_failed' && row.error_code === 'processor_timeout')
          return this.attention(
            target,
            `Checkout.com approved payment ${target.paymentId ?? ''} after it was counted as failed: void or refund it at Checkout.com`,
          );
        return this.settle(target, ['authorize'], {
          status: 'succeeded',
          ...(target.paymentId ? { vendorId: target.paymentId } : {}),
        });
      case 'payment_declined':
        return this.settle(target, ['authorize'], { status: 'failed', errorCode: 'declined' });
      case 'payment_captured':
        return this.settle(target, ['capture'], {
          status: 'succeeded',
          ...(target.actionId ? { vendorId: target.actionId } : {}),
        });
      case 'payment_capture_declined':
        if (row.status === 'capture_succeeded')
          return this.attention(
            target,
            'Checkout.com reported that the capture was declined after it succeeded',
          );
        return this.settle(target, ['capture'], { status: 'failed', errorCode: 'capture_failed' });
      case 'payment_voided':
        return this.settle(target, ['void'], { status: 'succeeded' });
      default:
        return this.settleRefund(target, target.type === 'payment_refunded');
    }
  }

  /** Settles the transaction's pending operation when it is one of `operations` (as Adyen's notifications do). */
  private async settle(
    target: Target,
    operations: ('authorize' | 'capture' | 'void')[],
    result: FinalOutcome,
  ): Promise<void> {
    const { row } = target;
    await this.work.transaction(systemOrigin(row.tenant_id), async (change) => {
      const current = await this.transactions.lock(change, row.tenant_id, row.id);
      if (!current) return;
      const state = stateOf(current);
      const awaitingBuyer = current.status === 'buyer_approval_pending';
      const pending =
        awaitingBuyer ||
        (['processing', 'capture_pending', 'authorization_void_pending'].includes(current.status) &&
          operations.includes(settlementOperation(state)));
      if (!pending || (awaitingBuyer && !operations.includes('authorize'))) return;
      const now = this.clock.now();
      const next = transition(
        awaitingBuyer ? { ...state, status: 'processing', pendingOperation: 'challenge' } : state,
        { kind: 'settled', result },
        now,
      );
      const patch = awaitingBuyer ? { ...next.patch, approval: 'clear' as const } : next.patch;
      if (!(await this.journal.apply(change, row.tenant_id, row.id, { from: current.status, patch }, now)))
        return;
      this.journal.log(change, row.id, 'update', `Checkout.com webhook ${target.type}: ${patch.status}`);
    });
  }

  private async settleRefund(target: Target, succeeded: boolean): Promise<void> {
    const { row, suffix } = target;
    if (!suffix || suffix === 'capture' || suffix === 'void') return;
    let id: string;
    try {
      id = fromReconciliationId(suffix);
    } catch {
      return;
    }
    if (toReconciliationId(id) !== suffix) return;
    const refund = await this.refunds.find(row.tenant_id, row.id, id);
    if (!refund) return;
    if (refund.status !== 'processing') {
      if (refund.status === 'succeeded' && !succeeded)
        await this.attention(
          target,
          `Checkout.com reported that refund ${refund.id} was declined after it succeeded`,
        );
      return;
    }
    await this.work.transaction(systemOrigin(row.tenant_id), async (change) => {
      const settled = await this.journal.settleRefund(
        change,
        refund,
        succeeded ? 'succeeded' : 'failed',
        target.actionId,
      );
      this.journal.log(
        change,
        row.id,
        'update',
        `Checkout.com webhook ${target.type}: refund ${refund.id} ${settled.status}`,
      );
    });
  }

  /** Something only a person can sort out (the vendor reversed what it confirmed): logged and audited. */
  private async attention(target: Target, message: string): Promise<void> {
    this.logger.error({ transaction_id: target.row.id }, message);
    await this.work.transaction(systemOrigin(target.row.tenant_id), (change) => {
      this.journal.log(change, target.row.id, 'update', message);
      return Promise.resolve();
    });
  }
}
