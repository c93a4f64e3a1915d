import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../../../common/jobs/clock';
import type { Origin } from '../../../common/unit-of-work/change';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { ConnectionsService } from '../connections/connections.service';
import { processorFailure, ProcessorUnavailable, withTimeout } from '../processors/processor-calls';
import type { AuthorizeResult, Processor } from '../processors/processor.port';
import { ProcessorRegistry } from '../processors/processor.registry';
import { approvalDigest, ApprovalLinks } from '../transactions/approval-links';
import { fromReconciliationId } from '../processors/reconciliation';
import { TransactionJournal } from '../transactions/transaction-journal';
import { transition } from '../transactions/transaction-state';
import { stateOf, TransactionRow, TransactionsRepository } from '../transactions/transactions.repository';

/** What the approval page shows: where the link stands, and the transaction once the buyer decided. */
export type ApprovalOutcome =
  'unknown' | 'used' | 'expired' | 'approved' | 'declined' | 'failed' | 'processing';

/** What the page tells the buyer once the processor answered the challenge. */
const PAGE_OUTCOME: Record<AuthorizeResult['outcome'], ApprovalOutcome> = {
  approved: 'approved',
  declined: 'declined',
  failed: 'failed',
  challenge: 'failed',
};

/** The buyer as the audit log names them (actor type `buyer`): the tenant's, acting through no application. */
const buyer = (row: Pick<TransactionRow, 'tenant_id'>): Origin => ({
  actor: { tenantId: row.tenant_id, applicationId: null },
});

/** Buyer approvals (3-D Secure challenges): the page's view of a link and the buyer's decision. */
@Injectable()
export class ApprovalsService {
  private readonly logger = new Logger('Approvals');

  constructor(
    private readonly transactions: TransactionsRepository,
    private readonly journal: TransactionJournal,
    private readonly connections: ConnectionsService,
    private readonly processors: ProcessorRegistry,
    private readonly links: ApprovalLinks,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
  ) {}

  /** The approval page's view of a pending transaction, or why there is none. */
  async find(
    token: string,
  ): Promise<{ row?: TransactionRow; state: 'unknown' | 'used' | 'expired' | 'pending' }> {
    const row = await this.transactions.findByApprovalDigest(approvalDigest(token));
    if (!row) return { state: 'unknown' };
    if (row.error_code === 'approval_expired') return { state: 'expired', row };
    if (row.status !== 'buyer_approval_pending') return { state: 'used', row };
    if (row.approval_expires_at && row.approval_expires_at <= this.clock.now())
      return { state: 'expired', row };
    return { state: 'pending', row };
  }

  /** The buyer's choice on the approval page; returns what the page shows next. */
  async decide(
    token: string,
    approved: boolean,
  ): Promise<{ outcome: ApprovalOutcome; row?: TransactionRow }> {
    // Found by the link's digest, then locked by its key (one shard when distributed by tenant).
    const found = await this.transactions.findByApprovalDigest(approvalDigest(token));
    if (!found) return { outcome: 'unknown' };
    // Its connection (which never changes) is read before the change: a challenge at a vendor.
    const atVendor = !!(await this.vendorProcessor(found));
    const claimed = await this.work.transaction(buyer(found), async (change) => {
      const row = await this.transactions.lock(change, found.tenant_id, found.id);
      if (!row) return { outcome: 'unknown' as const };
      // Expired by the settlement job before the buyer came back: still an expired link, not a used one.
      if (row.error_code === 'approval_expired') return { outcome: 'expired' as const, row };
      if (row.status !== 'buyer_approval_pending') return { outcome: 'used' as const, row };
      // A challenge at a vendor is decided there (the buyer comes back to the return URL), never here.
      if (atVendor) return { outcome: 'unknown' as const };
      const now = this.clock.now();
      if (row.approval_expires_at && row.approval_expires_at <= now) {
        await this.journal.expireApproval(change, row, now);
        return { outcome: 'expired' as const, row };
      }
      await this.journal.apply(
        change,
        row.tenant_id,
        row.id,
        transition(stateOf(row), { kind: 'begin', operation: 'challenge', amount: null }, now),
        now,
      );
      return { outcome: 'claimed' as const, row };
    });
    if (claimed.outcome !== 'claimed') return claimed;
    return this.complete(claimed.row, approved);
  }

  /**
   * Where the approval page sends the buyer when the challenge happens at the vendor (a `test` or
   * `live` connection): the vendor's 3-D Secure page; null for the sandbox, or when the vendor no
   * longer awaits the buyer.
   */
  async vendorChallengeUrl(row: TransactionRow): Promise<string | null> {
    const kept = await this.links.vendorActionOf(row);
    if (kept) return kept.url;
    const connection = await this.connections.loadForPayment(row.tenant_id, row.connection_id, true);
    if (!connection || connection.row.environment === 'sandbox' || !row.connection_transaction_id)
      return null;
    const processor = this.processors.for(connection.row);
    if (!processor.challengeUrl) return null;
    try {
      return await withTimeout(processor.challengeUrl(this.journal.operationRequest(row, connection)));
    } catch (error) {
      this.logger.warn({ err: error, transaction_id: row.id }, 'the vendor did not give its challenge page');
      return null;
    }
  }

  /**
   * The buyer is back from the vendor's 3-D Secure page: the vendor's own state of the payment decides
   * (asking it can only confirm what the issuer decided, so the return URL needs no secret); what the
   * vendor appended must belong to the transaction (its adapter judges).
   */
  async returnFromVendor(
    reconciliationId: string,
    params: Record<string, string>,
  ): Promise<{ outcome: ApprovalOutcome; row?: TransactionRow }> {
    let id: string;
    try {
      id = fromReconciliationId(reconciliationId);
    } catch {
      return { outcome: 'unknown' };
    }
    const found = await this.transactions.findAwaitingBuyer(id);
    if (!found) return { outcome: 'unknown' };
    // Its connection (which never changes) is read before the change.
    const processor = await this.vendorProcessor(found);
    const claimed = await this.work.transaction(buyer(found), async (change) => {
      const row = await this.transactions.lock(change, found.tenant_id, found.id);
      if (!row || row.status !== 'buyer_approval_pending') return undefined;
      if (!processor?.returnMatches?.(params, row.connection_transaction_id)) return undefined;
      const now = this.clock.now();
      await this.journal.apply(
        change,
        row.tenant_id,
        row.id,
        transition(stateOf(row), { kind: 'begin', operation: 'challenge', amount: null }, now),
        now,
      );
      return row;
    });
    if (!claimed) return { outcome: 'unknown' };
    return this.complete(claimed, true, params);
  }

  /** The vendor adapter of a transaction whose challenge happens at the vendor; undefined in the sandbox. */
  private async vendorProcessor(row: TransactionRow): Promise<Processor | undefined> {
    const connection = await this.connections.loadForPayment(row.tenant_id, row.connection_id, true);
    if (!connection || connection.row.environment === 'sandbox') return undefined;
    return this.processors.for(connection.row);
  }

  /** Asks the processor how the challenge ended and records it (the transaction was claimed: `processing`). */
  private async complete(
    row: TransactionRow,
    approved: boolean,
    returnParams?: Record<string, string>,
  ): Promise<{ outcome: ApprovalOutcome; row?: TransactionRow }> {
    const connection = (await this.connections.loadForPayment(row.tenant_id, row.connection_id, true))!;
    let result: AuthorizeResult;
    try {
      result = await withTimeout(
        this.processors.for(connection.row).completeChallenge({
          credentials: connection.credentials,
          reconciliationId: this.journal.reconciliationId(row.id),
          attempt: row.attempt,
          connectionTransactionId: row.connection_transaction_id ?? '',
          intent: row.intent,
          approved,
          ...(returnParams ? { returnParams } : {}),
        }),
      );
    } catch (error) {
      if (error instanceof ProcessorUnavailable) {
        // The vendor did not tell how it ended: `processing` (where the claim left it) for the settlement job.
        this.logger.warn(
          { err: error, transaction_id: row.id },
          'challenge completion unanswered by the processor; left to settlement',
        );
        return { outcome: 'processing', row };
      }
      this.logger.warn(
        { err: error, transaction_id: row.id },
        'challenge completion failed at the processor',
      );
      result = processorFailure(row.connection_transaction_id, 'not_provided');
    }
    const applied = await this.work.transaction(buyer(row), async (change) => {
      const now = this.clock.now();
      // The state before the claim: `processing` is where the claim left it.
      const next = transition(
        { ...stateOf(row), status: 'processing' },
        { kind: 'challenge_completed', result },
        now,
      );
      const applied = await this.journal.apply(change, row.tenant_id, row.id, next, now);
      this.journal.log(
        change,
        row.id,
        'update',
        `Buyer ${approved ? 'approved' : 'declined'} the payment on the approval page: ${next.patch.status}`,
      );
      return applied;
    });
    const updated = applied ?? (await this.transactions.find(row.tenant_id, row.id))!;
    return { outcome: PAGE_OUTCOME[result.outcome], row: updated };
  }
}
