import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { ClsService } from 'nestjs-cls';
import { Clock } from '../../../common/jobs/clock';
import { ConnectionsService } from '../connections/connections.service';
import { ProcessorRegistry } from '../processors/processor.registry';
import type { OperationResult } from '../processors/processor.port';
import {
  SELECT_TRANSACTION,
  STUCK_AFTER_MS,
  TransactionRow,
  TransactionsService,
} from './transactions.service';

/**
 * Settles what a request could not: asynchronous captures and voids, operations interrupted by a crash
 * (`processing` for over a minute), expired buyer approvals and unanswered refunds. Safe on several
 * instances: each transaction is claimed by a conditional UPDATE before its processor is asked, and no
 * lock is held during the call.
 */
@Injectable()
export class SettlementService {
  private readonly logger = new Logger('Settlement');
  private running = false;

  constructor(
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly transactions: TransactionsService,
    private readonly connections: ConnectionsService,
    private readonly processors: ProcessorRegistry,
    private readonly clock: Clock,
    private readonly cls: ClsService,
  ) {}

  @Interval(1_000)
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.settle();
    } catch (error) {
      this.logger.error({ err: error }, 'settlement failed');
    } finally {
      this.running = false;
    }
  }

  /** One pass over everything unsettled; returns how many transactions and refunds moved. */
  async settle(): Promise<number> {
    const now = this.clock.now();
    const stuckBefore = new Date(now.getTime() - STUCK_AFTER_MS);
    const rows: TransactionRow[] = await this.db.tx.query(
      `${SELECT_TRANSACTION}
        WHERE (t.status IN ('capture_pending', 'authorization_void_pending'))
           OR (t.status = 'processing' AND t.pending_since <= $1)
           OR (t.status = 'buyer_approval_pending' AND t.approval_expires_at <= $2)
        ORDER BY t.updated_at LIMIT 100`,
      [stuckBefore, now],
    );
    let moved = 0;
    for (const row of rows) {
      try {
        if (await this.cls.run(() => this.settleOne(row))) moved++;
      } catch (error) {
        this.logger.error({ err: error, transaction_id: row.id }, 'could not settle a transaction');
      }
    }
    return moved + (await this.settleRefunds(stuckBefore));
  }

  private async settleOne(row: TransactionRow): Promise<boolean> {
    const now = this.clock.now();
    if (row.status === 'buyer_approval_pending')
      return this.db.withTransaction(async () => {
        const current = await this.transactions.find(row.tenant_id, row.id, true);
        if (current.status !== 'buyer_approval_pending') return false;
        await this.transactions.expireApproval(current, now);
        return true;
      });

    const operation =
      row.pending_operation === 'challenge' ? 'authorize' : (row.pending_operation ?? 'authorize');
    const connection = await this.connections.loadForPayment(row.tenant_id, row.connection_id, true);
    if (!connection) return false;
    const result = await this.processors.for(connection.formula.id).pollStatus({
      ...this.transactions.operationRequest(row, connection),
      operation,
      requestedAt: row.pending_since ?? row.updated_at,
      amount: Number(row.pending_amount ?? row.amount),
      currency: row.currency,
    });
    if (result.status === 'pending') return false;

    return this.db.withTransaction(async () => {
      const from = row.status;
      let columns: Record<string, unknown>;
      if (operation === 'authorize') {
        // The processor never answered the authorization (the process died first): nothing was charged.
        columns =
          result.status === 'succeeded'
            ? row.intent === 'capture'
              ? {
                  status: 'capture_succeeded',
                  authorized_amount: row.amount,
                  authorized_at: now,
                  captured_amount: row.amount,
                  captured_at: now,
                }
              : { status: 'authorization_succeeded', authorized_amount: row.amount, authorized_at: now }
            : result.status === 'failed'
              ? { status: 'authorization_declined', error_code: 'declined' }
              : { status: 'authorization_failed', error_code: 'processor_timeout' };
      } else if (operation === 'capture') {
        columns = this.transactions.captureColumns(
          result,
          Number(row.pending_amount ?? row.authorized_amount),
          now,
        );
      } else {
        columns = this.transactions.voidColumns(result, now);
      }
      if (from === 'processing' && result.status === 'not_found' && operation !== 'authorize')
        columns.status = row.previous_status ?? 'authorization_succeeded';
      if (!(await this.transactions.applyUpdate(row.id, from, columns, now))) return false;
      await this.transactions.log(
        { tenantId: row.tenant_id, applicationId: null },
        row.id,
        'update',
        `Settled ${operation} (${describe(result)}): ${String(columns.status)}`,
      );
      return true;
    });
  }

  private async settleRefunds(stuckBefore: Date): Promise<number> {
    const refunds: {
      id: string;
      transaction_id: string;
      tenant_id: string;
      amount: string;
      currency: string;
      status: 'processing';
      created_at: Date;
    }[] = await this.db.tx.query(
      `SELECT id, transaction_id, tenant_id, amount, currency, status, created_at FROM refunds
          WHERE status = 'processing' AND updated_at <= $1 LIMIT 100`,
      [stuckBefore],
    );
    let moved = 0;
    for (const refund of refunds) {
      const row = await this.transactions.find(refund.tenant_id, refund.transaction_id);
      const connection = await this.connections.loadForPayment(row.tenant_id, row.connection_id, true);
      if (!connection) continue;
      const result = await this.processors.for(connection.formula.id).pollStatus({
        ...this.transactions.operationRequest(row, connection),
        operation: 'refund',
        requestedAt: refund.created_at,
        amount: Number(refund.amount),
        currency: refund.currency,
      });
      if (result.status === 'pending') continue;
      await this.cls.run(() =>
        this.db.withTransaction(async () => {
          const settled = await this.transactions.settleRefund(refund, result);
          await this.transactions.log(
            { tenantId: row.tenant_id, applicationId: null },
            row.id,
            'update',
            `Refund ${refund.id} settled: ${settled.status}`,
          );
        }),
      );
      moved++;
    }
    return moved;
  }
}

function describe(result: OperationResult | { status: 'not_found' }): string {
  return result.status === 'not_found' ? 'unknown to the processor' : result.status;
}
