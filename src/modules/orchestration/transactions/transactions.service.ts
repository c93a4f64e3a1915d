import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../../common/auth/principal';
import { ValidationException } from '../../../common/errors/domain.exception';
import { Clock } from '../../../common/jobs/clock';
import { Change, partOf } from '../../../common/unit-of-work/change';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { TokensService, UsableToken } from '../../tokens/tokens.service';
import { ConnectionsService, UsableConnection } from '../connections/connections.service';
import { supports } from '../formulas/formulas';
import { OrchestrationErrorCode, OrchestrationException } from '../orchestration.errors';
import { OPERATION_FAILURE, ProcessorUnavailable, withTimeout } from '../processors/processor-calls';
import type { OperationResult } from '../processors/processor.port';
import { ProcessorRegistry } from '../processors/processor.registry';
import { RefundsRepository } from './refunds.repository';
import { TransactionJournal } from './transaction-journal';
import { TransactionQueriesService } from './transaction-queries.service';
import { refundDto } from './transaction.mapper';
import { ClientOperation, refundStatus, refusal, transition, TransactionEvent } from './transaction-state';
import type { RefundDto, TransactionDto } from './transaction.dto';
import { stateOf, TransactionRow } from './transactions.repository';
import type {} from '../flows/flow-rule.dto';

const UNANSWERED = Symbol('unanswered');

/** A transaction `processing` for longer than this was interrupted (the process died): the job settles it. */
export const STUCK_AFTER_MS = 60_000;

/**
 * Capturing, voiding and refunding transactions (creating them: TransactionCreationService). Every
 * processor call happens outside any database transaction: the row is committed
 * as `processing` first (a crash leaves a record the job settles), the call is made holding no lock,
 * and the outcome is written in a second change with its audit row. Each method therefore opens its
 * changes itself, one before the call and one after, each `partOf` the request: the idempotency
 * interceptor records the response once the handler has answered. What a change needs from other
 * modules (the token, the connection with its credentials) is read before it opens, so that a change
 * holds one connection and its lock for its own statements only.
 */
@Injectable()
export class TransactionsService {
  private readonly logger = new Logger('Transactions');

  constructor(
    private readonly refunds: RefundsRepository,
    private readonly journal: TransactionJournal,
    private readonly tokens: TokensService,
    private readonly connections: ConnectionsService,
    private readonly processors: ProcessorRegistry,
    private readonly clock: Clock,
    private readonly queries: TransactionQueriesService,
    private readonly work: UnitOfWork,
  ) {}

  async capture(origin: RequestOrigin, id: string, amount?: number): Promise<TransactionDto> {
    const who = origin.actor;
    if (this.resumes(origin, id)) return this.queries.get(who, id);
    const connection = await this.connectionOf(who, id, 'capture');
    const { row, captureAmount } = await this.work.transaction(partOf(origin), async (change) => {
      const row = await this.claim(change, who, id, 'capture');
      const authorized = Number(row.authorized_amount);
      const captureAmount = amount ?? authorized;
      if (captureAmount > authorized)
        throw ValidationException.field(
          'amount',
          `amount must be at most the authorized amount ${authorized}`,
        );
      if (captureAmount < authorized && !supports(connection.formula, 'partial_capture'))
        throw ValidationException.field(
          'amount',
          `${connection.formula.id} does not support partial capture`,
        );
      await this.begin(change, row, { kind: 'begin', operation: 'capture', amount: captureAmount });
      // Commits with the operation: a retry after this request died answers the transaction as it stands.
      await change.pinResource(id);
      return { row, captureAmount };
    });
    const result = await this.call(() =>
      this.processors.for(connection.row).capture({
        ...this.journal.operationRequest(row, connection),
        amount: captureAmount,
        currency: row.currency,
      }),
    );
    if (result === UNANSWERED) return this.leftToSettlement(origin, id);
    return this.finish(
      origin,
      id,
      { kind: 'captured', result, amount: captureAmount },
      (status) => `Transaction capture of ${captureAmount} ${row.currency}: ${status}`,
    );
  }

  async void(origin: RequestOrigin, id: string): Promise<TransactionDto> {
    const who = origin.actor;
    if (this.resumes(origin, id)) return this.queries.get(who, id);
    const connection = await this.connectionOf(who, id, 'void');
    const row = await this.work.transaction(partOf(origin), async (change) => {
      const row = await this.claim(change, who, id, 'void');
      if (!supports(connection.formula, 'void'))
        throw new OrchestrationException(
          OrchestrationErrorCode.VoidNotSupported,
          `${connection.formula.id} does not support voiding an authorization.`,
        );
      await this.begin(change, row, { kind: 'begin', operation: 'void', amount: null });
      await change.pinResource(id);
      return row;
    });
    const result = await this.call(() =>
      this.processors.for(connection.row).void(this.journal.operationRequest(row, connection)),
    );
    if (result === UNANSWERED) return this.leftToSettlement(origin, id);
    return this.finish(origin, id, { kind: 'voided', result }, (status) => `Transaction void: ${status}`);
  }

  async refund(origin: RequestOrigin, id: string, amount?: number): Promise<RefundDto> {
    const who = origin.actor;
    // A retry of this very request after it died having recorded its refund: that refund, as it stands.
    const resumed = origin.idempotency?.resumed;
    if (resumed) {
      const earlier = await this.refunds.find(who.tenantId, id, resumed);
      if (earlier) return refundDto(earlier);
    }
    const connection = await this.connectionOf(who, id, 'refund');
    const { row, refund } = await this.work.transaction(partOf(origin), async (change) => {
      const row = await this.claim(change, who, id, 'refund');
      if (!supports(connection.formula, 'refunds'))
        throw new OrchestrationException(
          OrchestrationErrorCode.RefundsNotSupported,
          `${connection.formula.id} does not support refunds.`,
        );
      const pending = await this.refunds.pendingTotal(change, who.tenantId, id);
      const left = Number(row.captured_amount) - Number(row.refunded_amount) - pending;
      if (left <= 0)
        throw new OrchestrationException(
          OrchestrationErrorCode.Conflict,
          'The transaction has been refunded in full.',
        );
      const refundAmount = amount ?? left;
      if (refundAmount > left)
        throw ValidationException.field(
          'amount',
          `amount must be at most ${left}, what is left of the captured amount`,
        );
      if (refundAmount < left && !supports(connection.formula, 'partial_refunds'))
        throw ValidationException.field(
          'amount',
          `${connection.formula.id} does not support partial refunds`,
        );
      const refund = await this.refunds.insert(change, {
        id: randomUUID(),
        tenantId: who.tenantId,
        transactionId: id,
        amount: refundAmount,
        currency: row.currency,
        createdAt: this.clock.now(),
      });
      await change.pinResource(refund.id);
      return { row, refund };
    });
    const result = await this.call(() =>
      this.processors.for(connection.row).refund({
        ...this.journal.operationRequest(row, connection),
        amount: Number(refund.amount),
        currency: refund.currency,
        refundId: refund.id,
      }),
    );
    // Unanswered: the refund stays `processing` for the settlement job.
    if (result === UNANSWERED) return refundDto(refund);
    return this.work.transaction(partOf(origin), async (change) => {
      const settled = await this.journal.settleRefund(
        change,
        refund,
        refundStatus(result),
        result.vendorId ?? null,
      );
      this.journal.log(
        change,
        id,
        'update',
        `Refund ${refund.id} of ${refund.amount} ${refund.currency}: ${settled.status}`,
      );
      return refundDto(settled);
    });
  }

  /**
   * The connection of the transaction an operation runs on, read before the operation's change: a
   * void also needs `token:use` on the transaction's token (as creating it did). A transaction's
   * connection and token never change, so what its change then locks is the same transaction.
   */
  private async connectionOf(
    who: Principal,
    id: string,
    operation: ClientOperation,
  ): Promise<UsableConnection> {
    const row = await this.queries.find(who.tenantId, id);
    if (operation === 'void' && !(await this.usableToken(who, row.token_id)))
      throw OrchestrationException.transactionNotFound();
    const connection = await this.connections.loadForPayment(who.tenantId, row.connection_id, true);
    // Declined by a rule before any connection: the operation is refused for its status.
    if (!connection)
      throw new OrchestrationException(OrchestrationErrorCode.Conflict, refusal(stateOf(row), operation)!);
    return connection;
  }

  /** The transaction, locked in the change, once the operation may run on it (its required status). */
  private async claim(
    change: Change,
    who: Principal,
    id: string,
    operation: ClientOperation,
  ): Promise<TransactionRow> {
    const row = await this.queries.lock(change, who.tenantId, id);
    const refused = refusal(stateOf(row), operation);
    if (refused) throw new OrchestrationException(OrchestrationErrorCode.Conflict, refused);
    return row;
  }

  /** Holds the transaction in `processing` while its processor is asked. */
  private async begin(
    change: Change,
    row: TransactionRow,
    event: TransactionEvent & { kind: 'begin' },
  ): Promise<void> {
    await this.journal.apply(
      change,
      row.tenant_id,
      row.id,
      transition(stateOf(row), event, this.clock.now()),
      this.clock.now(),
    );
  }

  /** Writes what the processor answered to a capture or a void, with its audit row; answers the transaction. */
  private async finish(
    origin: RequestOrigin,
    id: string,
    event: TransactionEvent & { kind: 'captured' | 'voided' },
    message: (status: string) => string,
  ): Promise<TransactionDto> {
    const who = origin.actor;
    const row = await this.work.transaction(partOf(origin), async (change) => {
      const row = await this.queries.lock(change, who.tenantId, id);
      const next = transition(stateOf(row), event, this.clock.now());
      // Settled by the job meanwhile (the call outlasted STUCK_AFTER_MS): its outcome stands.
      const updated =
        row.status === 'processing'
          ? await this.journal.apply(change, who.tenantId, id, next, this.clock.now())
          : undefined;
      this.journal.log(change, id, 'update', message(event.result.status));
      return updated ?? row;
    });
    return this.queries.toDto(who, row);
  }

  /** The processor's answer; UNANSWERED when the vendor may or may not have acted (left to settlement). */
  private async call(work: () => Promise<OperationResult>): Promise<OperationResult | typeof UNANSWERED> {
    try {
      return await withTimeout(work());
    } catch (error) {
      if (error instanceof ProcessorUnavailable) {
        this.logger.warn({ err: error }, 'processor call unanswered; left to settlement');
        return UNANSWERED;
      }
      this.logger.warn({ err: error }, 'processor call failed');
      return OPERATION_FAILURE;
    }
  }

  /**
   * An operation whose outcome the vendor did not tell: the transaction stays `processing` (the job
   * settles it once it is STUCK_AFTER_MS old), and the caller gets the transaction as it stands.
   */
  private async leftToSettlement(origin: RequestOrigin, id: string): Promise<TransactionDto> {
    await this.work.transaction(partOf(origin), (change) => {
      this.journal.log(change, id, 'update', 'Processor did not answer: processing, left to settlement');
      return Promise.resolve();
    });
    return this.queries.get(origin.actor, id);
  }

  /** The token if the caller may use it; absent, expired or out of the caller's reach: undefined. */
  private usableToken(who: Principal, id: string): Promise<UsableToken | undefined> {
    return this.tokens.loadForUse(who, id);
  }

  /**
   * A retry of this very request (same idempotency key and body) whose earlier run died after it began
   * the operation on this transaction: the vendor may have acted, so the transaction as it stands is the
   * answer (settlement finishes a pending operation), never a second operation or a 409.
   */
  private resumes(origin: RequestOrigin, id: string): boolean {
    return origin.idempotency?.resumed === id;
  }
}
