import { Injectable } from '@nestjs/common';
import { AuditTrail } from '../../../common/audit/audit-trail.service';
import type { AuditActor, AuditEntry } from '../../../common/audit/audit.types';
import { Clock } from '../../../common/jobs/clock';
import type { UsableConnection } from '../connections/connections.service';
import type { OperationRequest } from '../processors/processor.port';
import { toReconciliationId } from './reconciliation';
import { RefundRow, RefundsRepository, RefundStatus } from './refunds.repository';
import { TransactionsRepository, TransactionRow } from './transactions.repository';

/** The actor of an audit row: an API caller, or the buyer / the settlement job (no application). */
export const actorOf = (who: AuditActor): AuditActor => ({
  tenantId: who.tenantId,
  applicationId: who.applicationId,
  sessionId: who.sessionId,
});

/**
 * What requests and the settlement job both do to a transaction besides moving its state: its audit
 * rows, the request every processor operation starts from, and the settling of a refund.
 */
@Injectable()
export class TransactionJournal {
  constructor(
    private readonly audit: AuditTrail,
    private readonly transactions: TransactionsRepository,
    private readonly refunds: RefundsRepository,
    private readonly clock: Clock,
  ) {}

  async log(
    actor: AuditActor,
    id: string,
    operation: AuditEntry['operation'],
    message: string,
  ): Promise<void> {
    await this.audit.write(actorOf(actor), [{ entityType: 'transaction', entityId: id, operation, message }]);
  }

  reconciliationId(id: string): string {
    return toReconciliationId(id);
  }

  operationRequest(row: TransactionRow, connection: UsableConnection): OperationRequest {
    return {
      credentials: connection.credentials,
      reconciliationId: toReconciliationId(row.id),
      connectionTransactionId: row.connection_transaction_id ?? '',
      cardLast4: row.payment_method.label,
    };
  }

  /**
   * Records a refund's outcome once (a request and the job never both settle it); a succeeded refund
   * adds to its transaction's refunded amount. Answers the refund as it now stands.
   */
  async settleRefund(refund: RefundRow, status: RefundStatus, vendorId: string | null): Promise<RefundRow> {
    const now = this.clock.now();
    const settled = await this.refunds.settle(refund, { status, vendorId }, now);
    if (settled && status === 'succeeded')
      await this.transactions.addRefunded(refund.tenant_id, refund.transaction_id, refund.amount, now);
    return settled ?? refund;
  }
}
