import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { Clock } from '../../../common/jobs/clock';
import { systemOrigin } from '../../../common/unit-of-work/change';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { AppConfig } from '../../../config/app-config';
import { ExclusiveJobRunner } from '../../../common/jobs/exclusive';
import { LOCK_KEYS } from '../../../database/data-source';
import { ConnectionsService } from '../connections/connections.service';
import { ProcessorRegistry } from '../processors/processor.registry';
import { RefundRow, RefundsRepository } from './refunds.repository';
import { TransactionJournal } from './transaction-journal';
import { isFinal, PollOutcome, refundStatus, settlementOperation, transition } from './transaction-state';
import { stateOf, TransactionRow, TransactionsRepository } from './transactions.repository';
import { STUCK_AFTER_MS } from './transactions.service';

const BATCH = 100;

/**
 * Settles what a request could not: asynchronous captures and voids, operations interrupted by a crash
 * (`processing` for over a minute), expired buyer approvals and unanswered refunds. Safe on several
 * instances: each transaction is settled by a conditional update (the state machine's `from`) after
 * its processor is asked, and no lock is held during the call. A stopping process ends a sweep after the
 * transaction or refund it is settling (ExclusiveJobRunner.stopping). Each settlement is a change of its own,
 * made by the service (`systemOrigin` of the transaction's tenant: its audit rows' actor is `system`).
 */
@Injectable()
export class SettlementService {
  private readonly logger = new Logger('Settlement');

  constructor(
    private readonly transactions: TransactionsRepository,
    private readonly refunds: RefundsRepository,
    private readonly journal: TransactionJournal,
    private readonly connections: ConnectionsService,
    private readonly processors: ProcessorRegistry,
    private readonly clock: Clock,
    private readonly jobs: ExclusiveJobRunner,
    private readonly config: AppConfig,
    private readonly work: UnitOfWork,
  ) {}

  @Interval(1_000)
  async tick(): Promise<void> {
    await this.jobs.runAlone('settlement', LOCK_KEYS.jobSettlement, () => this.settle());
  }

  /**
   * One pass over everything unsettled, or over one tenant's only (`tenantId`: a pass run by hand, which
   * must leave other tenants' operations to their own instances); returns how many transactions and
   * refunds moved.
   */
  async settle(tenantId: string | null = null): Promise<number> {
    const now = this.clock.now();
    const stuckBefore = new Date(now.getTime() - STUCK_AFTER_MS);
    const notified = {
      formulas: this.processors.notificationFormulas(),
      waitingSince: new Date(now.getTime() - this.config.VENDOR_NOTIFICATION_TIMEOUT_SECONDS * 1000),
    };
    const rows = await this.transactions.findUnsettled(stuckBefore, now, BATCH, notified, tenantId);
    let moved = 0;
    for (const row of rows) {
      // The process is stopping: the transaction settled last is the safe point (nothing is claimed).
      if (this.jobs.stopping) return moved;
      try {
        if (await this.settleOne(row)) moved++;
      } catch (error) {
        this.logger.error({ err: error, transaction_id: row.id }, 'could not settle a transaction');
      }
    }
    for (const refund of await this.refunds.findStuck(stuckBefore, BATCH, notified, tenantId)) {
      if (this.jobs.stopping) return moved;
      try {
        if (await this.settleRefund(refund)) moved++;
      } catch (error) {
        this.logger.error({ err: error, refund_id: refund.id }, 'could not settle a refund');
      }
    }
    return moved;
  }

  private async settleOne(row: TransactionRow): Promise<boolean> {
    if (row.status === 'buyer_approval_pending') {
      // At a vendor, the buyer may have authenticated after all (then the payment stands), else the
      // vendor's payment is cancelled first, so that a late authentication cannot charge the buyer.
      if ((await this.endVendorChallenge(row)) === 'authorized') return this.settleAsAuthorized(row);
      return this.work.transaction(systemOrigin(row.tenant_id), async (change) => {
        const current = await this.transactions.lock(change, row.tenant_id, row.id);
        if (current?.status !== 'buyer_approval_pending') return false;
        return this.journal.expireApproval(change, current, this.clock.now());
      });
    }

    const state = stateOf(row);
    const operation = settlementOperation(state);
    const result = await this.poll(
      row,
      operation,
      Number(row.pending_amount ?? row.amount),
      row.pending_since ?? row.updated_at,
    );
    if (!result || !isFinal(result)) return false;
    if (result.status === 'failed')
      this.logger.warn(
        { transaction_id: row.id, operation, error_code: result.errorCode },
        'settled an operation as failed',
      );
    return this.work.transaction(systemOrigin(row.tenant_id), async (change) => {
      const now = this.clock.now();
      const next = transition(state, { kind: 'settled', result }, now);
      if (!(await this.journal.apply(change, row.tenant_id, row.id, next, now))) return false;
      this.journal.log(
        change,
        row.id,
        'update',
        `Settled ${operation} (${describe(result)}): ${next.patch.status}`,
      );
      return true;
    });
  }

  private async settleRefund(refund: RefundRow): Promise<boolean> {
    const row = await this.transactions.find(refund.tenant_id, refund.transaction_id);
    if (!row) return false;
    const result = await this.poll(
      row,
      'refund',
      Number(refund.amount),
      refund.created_at,
      refund.currency,
      refund.id,
    );
    if (!result || !isFinal(result)) return false;
    if (result.status === 'failed')
      this.logger.warn(
        { transaction_id: row.id, refund_id: refund.id, error_code: result.errorCode },
        'settled a refund as failed',
      );
    await this.work.transaction(systemOrigin(row.tenant_id), async (change) => {
      const settled = await this.journal.settleRefund(
        change,
        refund,
        refundStatus(result),
        'vendorId' in result ? (result.vendorId ?? null) : null,
      );
      this.journal.log(change, row.id, 'update', `Refund ${refund.id} settled: ${settled.status}`);
    });
    return true;
  }

  /**
   * An expired challenge at a vendor (a `test` or `live` connection): `authorized` when the vendor
   * authorized the payment meanwhile, else the vendor's payment is cancelled and the challenge `ended`.
   * Sandbox challenges live here only: `ended` at once.
   */
  private async endVendorChallenge(row: TransactionRow): Promise<'authorized' | 'ended'> {
    const connection = await this.connections.loadForPayment(row.tenant_id, row.connection_id, true);
    if (!connection || connection.row.environment === 'sandbox' || !row.connection_transaction_id)
      return 'ended';
    const processor = this.processors.for(connection.row);
    const request = this.journal.operationRequest(row, connection);
    const authorized = async () =>
      (
        await processor.pollStatus({
          ...request,
          operation: 'authorize',
          requestedAt: row.created_at,
          amount: Number(row.amount),
          currency: row.currency,
          now: this.clock.now(),
        })
      ).status === 'succeeded';
    if (await authorized()) return 'authorized';
    const cancelled = await processor.void(request);
    // Refused: the buyer authenticated in between (a captured payment cannot be cancelled).
    if (cancelled.status !== 'succeeded' && (await authorized())) return 'authorized';
    return 'ended';
  }

  private settleAsAuthorized(row: TransactionRow): Promise<boolean> {
    return this.work.transaction(systemOrigin(row.tenant_id), async (change) => {
      const current = await this.transactions.lock(change, row.tenant_id, row.id);
      if (current?.status !== 'buyer_approval_pending') return false;
      const now = this.clock.now();
      const next = transition(stateOf(current), { kind: 'settled', result: { status: 'succeeded' } }, now);
      if (
        !(await this.journal.apply(
          change,
          row.tenant_id,
          row.id,
          { ...next, patch: { ...next.patch, approval: 'clear' } },
          now,
        ))
      )
        return false;
      this.journal.log(
        change,
        row.id,
        'update',
        `Settled authorize (authenticated at the vendor): ${next.patch.status}`,
      );
      return true;
    });
  }

  /** Where an operation stands at the processor; undefined when the connection is gone. */
  private async poll(
    row: TransactionRow,
    operation: 'authorize' | 'capture' | 'void' | 'refund',
    amount: number,
    requestedAt: Date,
    currency = row.currency,
    refundId?: string,
  ): Promise<PollOutcome | undefined> {
    const connection = await this.connections.loadForPayment(row.tenant_id, row.connection_id, true);
    if (!connection) return undefined;
    return this.processors.for(connection.row).pollStatus({
      ...this.journal.operationRequest(row, connection),
      operation,
      requestedAt,
      amount,
      currency,
      now: this.clock.now(),
      ...(refundId ? { refundId } : {}),
    });
  }
}

function describe(result: PollOutcome): string {
  return result.status === 'not_found' ? 'unknown to the processor' : result.status;
}
