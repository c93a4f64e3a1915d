import { Injectable, Logger } from '@nestjs/common';
import { unauthorized } from '../../../common/errors/problem.exception';
import { Clock } from '../../../common/jobs/clock';
import { systemOrigin } from '../../../common/unit-of-work/change';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { ConnectionsService, UsableConnection } from '../connections/connections.service';
import { AdyenProcessor } from '../processors/adyen/adyen.processor';
import { SignedNotificationFields, verifyAdyenSignature } from '../processors/adyen/adyen-hmac';
import { fromReconciliationId, toReconciliationId } from '../processors/reconciliation';
import { RelayNotifications, RelayTarget } from '../relay/relay-notifications';
import { RefundsRepository } from '../transactions/refunds.repository';
import { TransactionJournal } from '../transactions/transaction-journal';
import { FinalOutcome, settlementOperation, transition } from '../transactions/transaction-state';
import { stateOf, TransactionRow, TransactionsRepository } from '../transactions/transactions.repository';

/** One `NotificationRequestItem` of Adyen's standard webhook, as far as it is read here. */
export interface AdyenNotificationItem extends SignedNotificationFields {
  reason?: string;
  additionalData?: Record<string, unknown>;
}

/** What a notification's merchant reference names: the transaction, and a refund or a technical cancel. */
interface Target {
  item: AdyenNotificationItem;
  row: TransactionRow;
  connection: UsableConnection;
  refundKey: string | null;
  technicalCancel: boolean;
}

/** An item about a relay refund (a payment made before the migration: no transaction of ours). */
type RelayItem = RelayTarget & { item: AdyenNotificationItem };

/**
 * Our merchant references: the transaction's reconciliation id, `.a<n>` for its attempt n > 1 (an
 * authorization, or the technical cancel of one), then `.cancel` or a refund's key.
 */
const REFERENCE = /^([0-9A-Za-z]{1,22})(?:\.a([2-5]))?(?:\.([0-9A-Za-z]{1,22}))?$/;

/** Why a batch is refused: a fixed reason, never a value from the request. */
const REFUSED = 'The notification could not be verified.';

/**
 * Adyen's notifications at `POST /orchestration/vendors/adyen/notifications`.
 * Each item's merchant reference is a transaction's reconciliation id (a refund's adds its own), so
 * the transaction, its connection and that connection's `hmac_key` are found first; every item of the
 * batch must carry a valid signature under its own connection's key, else the whole batch is refused
 * (401) and nothing changes. Items about payments made elsewhere on the merchant account are accepted
 * and ignored. Applying is idempotent: each change is a state machine transition from the state the
 * operation left (or the refund's `processing`), so a notification sent again (same pspReference)
 * finds it settled and changes nothing. Each item's change is made by the service for the transaction's
 * tenant (`systemOrigin`): Adyen is no caller of ours.
 */
@Injectable()
export class AdyenNotificationsService {
  private readonly logger = new Logger('AdyenNotifications');

  constructor(
    private readonly transactions: TransactionsRepository,
    private readonly refunds: RefundsRepository,
    private readonly journal: TransactionJournal,
    private readonly connections: ConnectionsService,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
    private readonly relays: RelayNotifications,
  ) {}

  /** Verifies the whole batch, then applies each item; throws a 401 when any item is not verified. */
  async receive(body: unknown): Promise<void> {
    const items = itemsOf(body);
    if (!items) throw unauthorized(REFUSED);
    const targets: (Target | RelayItem)[] = [];
    for (const item of items) {
      const target = (await this.targetOf(item)) ?? (await this.relayOf(item));
      if (!target) continue;
      const key = target.connection.credentials.hmac_key ?? '';
      if (!verifyAdyenSignature(item, item.additionalData?.hmacSignature, key)) {
        this.logger.warn(
          {
            ...('relay' in target ? { relay_refund_id: target.relay.id } : { transaction_id: target.row.id }),
            event_code: safeCode(item.eventCode),
          },
          'an Adyen notification failed its HMAC check; the batch is refused',
        );
        throw unauthorized(REFUSED);
      }
      targets.push(target);
    }
    for (const target of targets) await ('relay' in target ? this.applyRelay(target) : this.apply(target));
  }

  /** A relay refund's item, when its reference names one at an adyen-card connection of its merchant account. */
  private async relayOf(item: AdyenNotificationItem): Promise<RelayItem | undefined> {
    const target = await this.relays.find(item.merchantReference, AdyenProcessor.formula);
    if (!target || item.merchantAccountCode !== target.connection.credentials.merchant_account)
      return undefined;
    return { ...target, item };
  }

  /** REFUND and REFUND_FAILED settle a relay refund; nothing else is about one. */
  private async applyRelay(target: RelayItem): Promise<void> {
    const event = safeCode(target.item.eventCode);
    if (event !== 'REFUND' && event !== 'REFUND_FAILED') return;
    const succeeded = target.item.success === 'true' && event === 'REFUND';
    await this.relays.settle(
      target,
      succeeded,
      psp(target.item) ?? null,
      `Adyen notification ${event} (success ${target.item.success === 'true'})`,
    );
  }

  /** The transaction an item is about, when it is one of ours on an adyen-card vendor connection. */
  private async targetOf(item: AdyenNotificationItem): Promise<Target | undefined> {
    const match = REFERENCE.exec(typeof item.merchantReference === 'string' ? item.merchantReference : '');
    if (!match) return undefined;
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
      connection.row.formulaId !== AdyenProcessor.formula ||
      connection.row.environment === 'sandbox' ||
      item.merchantAccountCode !== connection.credentials.merchant_account
    )
      return undefined;
    const suffix = match[3] ?? null;
    // An authorization (or its technical cancel) names its attempt; the operations after the one
    // that authorized (captures, cancels, refunds) name the transaction only.
    const aboutAttempt = safeCode(item.eventCode) === 'AUTHORISATION' || suffix === 'cancel';
    const attempt = match[2] ? Number(match[2]) : 1;
    if (aboutAttempt ? attempt !== row.attempt : match[2] !== undefined) {
      // An attempt the transaction has moved on from certainly moved no money: nothing to do.
      this.logger.log(
        { transaction_id: row.id },
        'an Adyen notification about an earlier attempt is ignored',
      );
      return undefined;
    }
    return {
      item,
      row,
      connection,
      refundKey: suffix && suffix !== 'cancel' ? suffix : null,
      technicalCancel: suffix === 'cancel',
    };
  }

  private async apply(target: Target): Promise<void> {
    const { item } = target;
    const success = item.success === 'true';
    const event = safeCode(item.eventCode);
    switch (event) {
      case 'AUTHORISATION':
        return this.settle(
          target,
          ['authorize'],
          success
            ? { status: 'succeeded', vendorId: psp(item) }
            : {
                status: 'failed',
                errorCode: 'declined',
              },
        );
      case 'CAPTURE':
      case 'CAPTURE_FAILED':
        if (event === 'CAPTURE_FAILED' && target.row.status === 'capture_succeeded')
          return this.attention(target, 'Adyen reported that the capture failed after it succeeded');
        return this.settle(
          target,
          ['capture'],
          success && event === 'CAPTURE'
            ? { status: 'succeeded', vendorId: psp(item) }
            : { status: 'failed', errorCode: 'capture_failed' },
        );
      case 'CANCELLATION':
        if (target.technicalCancel) return;
        return this.settle(
          target,
          ['void'],
          success ? { status: 'succeeded' } : { status: 'failed', errorCode: 'void_failed' },
        );
      case 'REFUND':
      case 'REFUND_FAILED':
        return this.settleRefund(target, success && event === 'REFUND');
      default:
        return;
    }
  }

  /**
   * Settles the transaction's pending operation when it is one of `operations` (a request's own answer
   * may still be on its way: `processing` is settled as well as `capture_pending` and the like; an
   * authorization awaiting the buyer is settled by its AUTHORISATION).
   */
  private async settle(
    target: Target,
    operations: ('authorize' | 'capture' | 'void')[],
    result: FinalOutcome,
  ): Promise<void> {
    const { row, item } = target;
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
      this.journal.log(
        change,
        row.id,
        'update',
        `Adyen notification ${safeCode(item.eventCode)} (success ${item.success === 'true'}): ${patch.status}`,
      );
    });
  }

  private async settleRefund(target: Target, succeeded: boolean): Promise<void> {
    const { row, item, refundKey } = target;
    if (!refundKey) return;
    // Read before its change: settling it applies only while it is `processing` (settleRefund).
    const refund = await this.refundOf(row, refundKey);
    if (!refund) return;
    if (refund.status !== 'processing') {
      if (refund.status === 'succeeded' && !succeeded)
        await this.attention(target, `Adyen reported that refund ${refund.id} failed after it succeeded`);
      return;
    }
    await this.work.transaction(systemOrigin(row.tenant_id), async (change) => {
      const settled = await this.journal.settleRefund(
        change,
        refund,
        succeeded ? 'succeeded' : 'failed',
        psp(item) ?? null,
      );
      this.journal.log(
        change,
        row.id,
        'update',
        `Adyen notification ${safeCode(item.eventCode)}: refund ${refund.id} ${settled.status}`,
      );
    });
  }

  /** The refund whose reference suffix is `key` (its id in reconciliation form). */
  private async refundOf(row: TransactionRow, key: string) {
    let id: string;
    try {
      id = fromReconciliationId(key);
    } catch {
      return undefined;
    }
    if (toReconciliationId(id) !== key) return undefined;
    return this.refunds.find(row.tenant_id, row.id, id);
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

/** The items of a notification body, or undefined when it is not one. */
function itemsOf(body: unknown): AdyenNotificationItem[] | undefined {
  const list = (body as { notificationItems?: unknown } | null)?.notificationItems;
  if (!Array.isArray(list) || list.length === 0 || list.length > 1000) return undefined;
  const items: AdyenNotificationItem[] = [];
  for (const entry of list) {
    const item = (entry as { NotificationRequestItem?: unknown } | null)?.NotificationRequestItem;
    if (!item || typeof item !== 'object' || Array.isArray(item)) return undefined;
    items.push(item);
  }
  return items;
}

/** An event code as logged and audited: Adyen's upper-case words, else a fixed placeholder. */
function safeCode(code: unknown): string {
  return typeof code === 'string' && /^[A-Z_]{1,40}$/.test(code) ? code : 'UNKNOWN';
}

function psp(item: AdyenNotificationItem): string | undefined {
  return typeof item.pspReference === 'string' && /^[A-Za-z0-9]{1,64}$/.test(item.pspReference)
    ? item.pspReference
    : undefined;
}
