import { IdempotentResource } from '../../../common/context/idempotent-resource';
import { currentChange, inTransaction } from '../../../common/context/transactional';
import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../../common/auth/principal';
import { ValidationException } from '../../../common/errors/domain.exception';
import { addFieldError, FieldErrors } from '../../../common/errors/problem.exception';
import { Clock } from '../../../common/jobs/clock';
import { TokensService, UsableToken } from '../../tokens/tokens.service';
import { ConnectionsService, UsableConnection } from '../connections/connections.service';
import { supports } from '../formulas/formulas';
import { OrchestrationErrorCode, OrchestrationException } from '../orchestration.errors';
import {
  OPERATION_FAILURE,
  processorFailure,
  ProcessorUnavailable,
  withTimeout,
} from '../processors/processor-calls';
import type { AuthorizeResult, CardData, OperationResult } from '../processors/processor.port';
import { ProcessorRegistry } from '../processors/processor.registry';
import { ApprovalLinks } from './approval-links';
import { RefundsRepository } from './refunds.repository';
import {
  checkAgainstConnection,
  checkMetadata,
  paymentMethodOf,
  threeDSessionId,
} from './transaction-checks';
import { TransactionJournal } from './transaction-journal';
import { TransactionQueriesService } from './transaction-queries.service';
import { refundDto } from './transaction.mapper';
import { ClientOperation, refundStatus, refusal, transition, TransactionEvent } from './transaction-state';
import type { CreateTransactionDto, RefundDto, TransactionDto } from './transaction.dto';
import { stateOf, TransactionRow, TransactionsRepository } from './transactions.repository';

const UNANSWERED = Symbol('unanswered');

/** A transaction `processing` for longer than this was interrupted (the process died): the job settles it. */
export const STUCK_AFTER_MS = 60_000;

/**
 * Transactions. Every processor call happens outside any database transaction:
 * the row is committed as `processing` first (a crash leaves a record the job settles), the call is
 * made holding no lock, and the outcome is written in a second transaction with its audit log. Each
 * method therefore declares its transactions itself, around the steps before and after the call.
 */
@Injectable()
export class TransactionsService {
  private readonly logger = new Logger('Transactions');

  constructor(
    private readonly transactions: TransactionsRepository,
    private readonly refunds: RefundsRepository,
    private readonly journal: TransactionJournal,
    private readonly approvals: ApprovalLinks,
    private readonly tokens: TokensService,
    private readonly connections: ConnectionsService,
    private readonly processors: ProcessorRegistry,
    private readonly clock: Clock,
    private readonly queries: TransactionQueriesService,
  ) {}

  async create(who: Principal, body: CreateTransactionDto): Promise<TransactionDto> {
    // A retry of this very request (same idempotency key and body) whose process died after it committed
    // the transaction: the vendor may have charged, so that transaction is the answer, as it stands now
    // (the settlement job or the vendor's notification settles it), and nothing is created or called.
    const resumed = IdempotentResource.resumed();
    if (resumed) {
      this.logger.log(
        { transaction_id: resumed },
        'retry of an interrupted request answered with its transaction',
      );
      return this.queries.get(who, resumed);
    }
    const sessionId = threeDSessionId(body.three_d_session_id);
    const { id, connection, token, createdAt } = await inTransaction(async () => {
      const errors: FieldErrors = {};
      const connection = await this.connections.loadForPayment(who.tenantId, body.connection_id);
      if (!connection) addFieldError(errors, 'connection_id', 'no such connection');
      else checkAgainstConnection(connection, body, errors);
      if (body.is_subsequent_payment && !body.previous_scheme_transaction_id)
        addFieldError(
          errors,
          'previous_scheme_transaction_id',
          'required when is_subsequent_payment is true',
        );
      checkMetadata(body.metadata, errors);
      const token = await this.cardToken(who, body.token, errors);
      if (Object.keys(errors).length || !connection || !token) throw new ValidationException(errors);

      const id = randomUUID();
      const createdAt = this.clock.now();
      await this.journal.insert({
        id,
        tenantId: who.tenantId,
        connectionId: connection.row.id,
        tokenId: token.id,
        intent: body.intent ?? 'authorize',
        amount: body.amount,
        currency: body.currency,
        country: body.country ?? null,
        externalIdentifier: body.external_identifier ?? null,
        metadata: body.metadata ?? null,
        paymentSource: body.payment_source ?? 'ecommerce',
        merchantInitiated: body.merchant_initiated ?? false,
        isSubsequentPayment: body.is_subsequent_payment ?? false,
        previousSchemeTransactionId: body.previous_scheme_transaction_id ?? null,
        threeDSessionId: sessionId,
        paymentMethod: paymentMethodOf(token),
        createdBy: who.applicationId,
        createdAt,
      });
      // Commits with the row: a retry after a crash from here on answers this transaction.
      await IdempotentResource.pin(id);
      return { id, connection, token, createdAt };
    });

    const paymentSource = body.payment_source ?? 'ecommerce';
    const cvc = paymentSource === 'ecommerce' ? token.cvc : undefined;
    const data = token.data as CardData;
    let result: AuthorizeResult;
    try {
      result = await withTimeout(
        this.processors.for(connection.row).authorize({
          credentials: connection.credentials,
          reconciliationId: this.journal.reconciliationId(id),
          amount: body.amount,
          currency: body.currency,
          country: body.country ?? null,
          intent: body.intent ?? 'authorize',
          card: {
            number: data.number,
            expiration_month: data.expiration_month,
            expiration_year: data.expiration_year,
          },
          ...(cvc !== undefined ? { cvc } : {}),
          paymentSource,
          merchantInitiated: body.merchant_initiated ?? false,
          isSubsequentPayment: body.is_subsequent_payment ?? false,
          previousSchemeTransactionId: body.previous_scheme_transaction_id ?? null,
          threeDSessionId: sessionId,
          threeDSecureEnabled: connection.row.threeDSecureEnabled,
        }),
      );
    } catch (error) {
      if (error instanceof ProcessorUnavailable) {
        // The vendor may have charged: the row stays `processing`, the settlement job asks the vendor.
        this.logger.warn(
          { err: error, transaction_id: id },
          'authorization unanswered by the processor; left to settlement',
        );
        return this.leftToSettlement(who, id, cvc !== undefined ? token.id : undefined);
      }
      this.logger.warn({ err: error, transaction_id: id }, 'authorization failed at the processor');
      result = processorFailure(null, cvc === undefined ? 'not_provided' : 'unavailable');
    }

    try {
      return await inTransaction(async () => {
        const row = await this.queries.find(who.tenantId, id, true);
        const next = transition(stateOf(row), { kind: 'authorized', result }, this.clock.now());
        let updated: TransactionRow | undefined;
        // Settled by the job meanwhile (the call outlasted STUCK_AFTER_MS): its outcome stands.
        if (row.status === 'processing') {
          const approval =
            next.patch.approval === 'issue'
              ? await this.approvals.issue(who.tenantId, id, createdAt, result.vendorAction)
              : undefined;
          updated = await this.journal.apply(who.tenantId, id, next, this.clock.now(), approval);
        }
        // The CVC serves one authorization only (the token object does not change: no token event).
        if (cvc !== undefined) await this.tokens.forgetCvc(currentChange()!, who.tenantId, token.id);
        await this.journal.log(who, id, 'create', `Transaction created: ${next.patch.status}`);
        return updated ? this.queries.toDto(who, updated) : this.queries.get(who, id);
      });
    } catch (error) {
      // The processor answered but the outcome could not be written (database gone, process stopping):
      // the row stays `processing`, the settlement job asks the processor and finishes it. The caller
      // gets the transaction as it stands, so that an idempotent retry replays it rather than charging again.
      this.logger.error(
        { err: error, transaction_id: id },
        'authorization outcome not recorded; left to settlement',
      );
      return this.queries.get(who, id);
    }
  }

  async capture(who: Principal, id: string, amount?: number): Promise<TransactionDto> {
    const { row, connection, captureAmount } = await inTransaction(async () => {
      const { row, connection } = await this.claim(who, id, 'capture');
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
      await this.begin(row, { kind: 'begin', operation: 'capture', amount: captureAmount });
      return { row, connection, captureAmount };
    });
    const result = await this.call(() =>
      this.processors.for(connection.row).capture({
        ...this.journal.operationRequest(row, connection),
        amount: captureAmount,
        currency: row.currency,
      }),
    );
    if (result === UNANSWERED) return this.leftToSettlement(who, id);
    return this.finish(
      who,
      id,
      { kind: 'captured', result, amount: captureAmount },
      (status) => `Transaction capture of ${captureAmount} ${row.currency}: ${status}`,
    );
  }

  async void(who: Principal, id: string): Promise<TransactionDto> {
    const { row, connection } = await inTransaction(async () => {
      const { row, connection } = await this.claim(who, id, 'void');
      if (!supports(connection.formula, 'void'))
        throw new OrchestrationException(
          OrchestrationErrorCode.VoidNotSupported,
          `${connection.formula.id} does not support voiding an authorization.`,
        );
      await this.begin(row, { kind: 'begin', operation: 'void', amount: null });
      return { row, connection };
    });
    const result = await this.call(() =>
      this.processors.for(connection.row).void(this.journal.operationRequest(row, connection)),
    );
    if (result === UNANSWERED) return this.leftToSettlement(who, id);
    return this.finish(who, id, { kind: 'voided', result }, (status) => `Transaction void: ${status}`);
  }

  async refund(who: Principal, id: string, amount?: number): Promise<RefundDto> {
    const { row, connection, refund } = await inTransaction(async () => {
      const { row, connection } = await this.claim(who, id, 'refund');
      if (!supports(connection.formula, 'refunds'))
        throw new OrchestrationException(
          OrchestrationErrorCode.RefundsNotSupported,
          `${connection.formula.id} does not support refunds.`,
        );
      const pending = await this.refunds.pendingTotal(who.tenantId, id);
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
      const refund = await this.refunds.insert({
        id: randomUUID(),
        tenantId: who.tenantId,
        transactionId: id,
        amount: refundAmount,
        currency: row.currency,
        createdAt: this.clock.now(),
      });
      return { row, connection, refund };
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
    return inTransaction(async () => {
      const settled = await this.journal.settleRefund(refund, refundStatus(result), result.vendorId ?? null);
      await this.journal.log(
        who,
        id,
        'update',
        `Refund ${refund.id} of ${refund.amount} ${refund.currency}: ${settled.status}`,
      );
      return refundDto(settled);
    });
  }

  /**
   * The transaction, locked, with its connection, once the operation may run on it: a void needs
   * `token:use` on the transaction's token (as creating it did), every operation its required status.
   */
  private async claim(
    who: Principal,
    id: string,
    operation: ClientOperation,
  ): Promise<{ row: TransactionRow; connection: UsableConnection }> {
    const row = await this.queries.find(who.tenantId, id, true);
    if (operation === 'void' && !(await this.usableToken(who, row.token_id)))
      throw OrchestrationException.transactionNotFound();
    const refused = refusal(stateOf(row), operation);
    if (refused) throw new OrchestrationException(OrchestrationErrorCode.Conflict, refused);
    const connection = (await this.connections.loadForPayment(who.tenantId, row.connection_id, true))!;
    return { row, connection };
  }

  /** Holds the transaction in `processing` while its processor is asked. */
  private async begin(row: TransactionRow, event: TransactionEvent & { kind: 'begin' }): Promise<void> {
    await this.journal.apply(
      row.tenant_id,
      row.id,
      transition(stateOf(row), event, this.clock.now()),
      this.clock.now(),
    );
  }

  /** Writes what the processor answered to a capture or a void, with its audit log; answers the transaction. */
  private finish(
    who: Principal,
    id: string,
    event: TransactionEvent & { kind: 'captured' | 'voided' },
    message: (status: string) => string,
  ): Promise<TransactionDto> {
    return inTransaction(async () => {
      const row = await this.queries.find(who.tenantId, id, true);
      const next = transition(stateOf(row), event, this.clock.now());
      // Settled by the job meanwhile (the call outlasted STUCK_AFTER_MS): its outcome stands.
      const updated =
        row.status === 'processing'
          ? await this.journal.apply(who.tenantId, id, next, this.clock.now())
          : undefined;
      await this.journal.log(who, id, 'update', message(event.result.status));
      return updated ? this.queries.toDto(who, updated) : this.queries.get(who, id);
    });
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
   * settles it once it is STUCK_AFTER_MS old), a CVC sent is forgotten all the same, and the caller
   * gets the transaction as it stands.
   */
  private async leftToSettlement(who: Principal, id: string, cvcTokenId?: string): Promise<TransactionDto> {
    return inTransaction(async () => {
      if (cvcTokenId) await this.tokens.forgetCvc(currentChange()!, who.tenantId, cvcTokenId);
      await this.journal.log(who, id, 'update', 'Processor did not answer: processing, left to settlement');
      return this.queries.get(who, id);
    });
  }

  /** The token, with `token:use` checked on it through the caller's rules; unknown or not a card: a field error. */
  private async cardToken(who: Principal, id: string, errors: FieldErrors): Promise<UsableToken | undefined> {
    const token = await this.usableToken(who, id);
    if (!token) addFieldError(errors, 'token', 'no such token');
    else if (token.type !== 'card') addFieldError(errors, 'token', 'the token must be of type card');
    else return token;
    return undefined;
  }

  /** The token if the caller may use it; absent, expired or out of the caller's reach: undefined. */
  private usableToken(who: Principal, id: string): Promise<UsableToken | undefined> {
    return this.tokens.loadForUse(who, id);
  }
}
