import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../../common/auth/principal';
import { ValidationException } from '../../../common/errors/domain.exception';
import { addFieldError, FieldErrors } from '../../../common/errors/problem.exception';
import { Clock } from '../../../common/jobs/clock';
import { partOf } from '../../../common/unit-of-work/change';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { TokensService, UsableToken } from '../../tokens/tokens.service';
import { connectionDto, UsableConnection } from '../connections/connections.service';
import { Metrics } from '../../../common/metrics/metrics';
import { ConnectionBreaker } from './connection-breaker';
import { answeredOutcome } from './attempt-status';
import { MAX_ATTEMPTS, retryable } from './failover';
import {
  processorFailure,
  ProcessorUnavailable,
  ProcessorUnreachable,
  withTimeout,
} from '../processors/processor-calls';
import {
  type AuthorizeResult,
  type CardData,
  cardholderPresent,
  type ThreeDSecureData,
} from '../processors/processor.port';
import { initiationOf } from '../processors/payment-initiation';
import { ProcessorRegistry } from '../processors/processor.registry';
import { ApprovalLinks } from './approval-links';
import { checkMetadata, threeDSecureData, threeDSessionId } from './transaction-checks';
import { newTransaction } from './new-transaction';
import { TransactionJournal } from './transaction-journal';
import { TransactionQueriesService } from './transaction-queries.service';
import { transition } from './transaction-state';
import type { CreateTransactionDto, TransactionDto } from './transaction.dto';
import { stateOf, TransactionRow } from './transactions.repository';
import { TransactionRouting } from './transaction-routing';
import { ChargedCard, ChargedCards } from './charged-card';
import { networkTokenOf } from './transaction-checks';
import type { FlowEvaluationDto } from '../flows/flow-rule.dto';
import { ConnectionTokensService, type ConnectionTokenUse } from '../buyers/connection-tokens.service';
import { attemptCredential, takesConnectionTokens } from './connection-token-choice';

const UNANSWERED = Symbol('unanswered');

/** A create body (or its dry run's) that passed its checks, its card and defaults filled in. */
interface CheckedRequest {
  /** The body with the charged card's token id and its payment source, given or defaulted. */
  body: CreateTransactionDto;
  card: ChargedCard;
  sessionId: string | null;
  threeDSecure: ThreeDSecureData | null;
}

/**
 * Creating transactions: the checks in their order (the body, the rules' early declines, the connection),
 * the authorization at the vendor, attempt after attempt while an attempt certainly moved no money and
 * a candidate remains (failover), and the dry run of routing. The processor call happens outside any
 * database transaction: the row is committed as `processing` first (a crash leaves a record the
 * settlement job settles), the call is made holding no lock, and the outcome is written in a second
 * change with its audit row, each change `partOf` the request (the idempotency interceptor records the
 * response once the handler has answered). Capture, void and refund: TransactionsService.
 */
@Injectable()
export class TransactionCreationService {
  private readonly logger = new Logger('Transactions');

  constructor(
    private readonly journal: TransactionJournal,
    private readonly approvals: ApprovalLinks,
    private readonly tokens: TokensService,
    private readonly processors: ProcessorRegistry,
    private readonly clock: Clock,
    private readonly queries: TransactionQueriesService,
    private readonly work: UnitOfWork,
    private readonly routing: TransactionRouting,
    private readonly breaker: ConnectionBreaker,
    private readonly metrics: Metrics,
    private readonly cards: ChargedCards,
    private readonly connectionTokens: ConnectionTokensService,
  ) {}

  async create(origin: RequestOrigin, body: CreateTransactionDto): Promise<TransactionDto> {
    const who = origin.actor;
    // A retry of this very request (same idempotency key and body) whose process died after it committed
    // the transaction: the vendor may have charged, so that transaction is the answer, as it stands now
    // (the settlement job or the vendor's notification settles it), and nothing is created or called.
    const resumed = origin.idempotency?.resumed;
    if (resumed) {
      this.logger.log(
        { transaction_id: resumed },
        'retry of an interrupted request answered with its transaction',
      );
      return this.queries.get(who, resumed);
    }
    // The body's own checks first, then the rules' early declines, then the connection (docs/routing.md).
    const checked = await this.check(who, body);
    const { card, sessionId, threeDSecure } = checked;
    const token = card.token;
    body = checked.body;
    if (body.store && card.buyer && !card.stored) await this.cards.countStoring(who, card);
    const decision = await this.routing.decide(who.tenantId, body, token);
    if (decision.declined) return this.declinedByRule(origin, body, card, sessionId, decision.ruleId);
    const candidates = body.connection_id
      ? [await this.routing.named(who.tenantId, { ...body, connection_id: body.connection_id }, token.type)]
      : await this.routing.candidates(who.tenantId, decision, body, token.type);
    let index = Math.max(this.breaker.next(candidates, 0, this.clock.now().getTime()), 0);
    let connection = candidates[index];

    const id = randomUUID();
    const createdAt = this.clock.now();
    await this.work.transaction(partOf(origin), async (change) => {
      // With its first attempt, `processing` before the vendor is called.
      await this.journal.insert(change, {
        ...newTransaction(who, id, body, card, sessionId, this.clock.now()),
        connectionId: connection.row.id,
        createdAt,
      });
      // Commits with the row: a retry after a crash from here on answers this transaction.
      await change.pinResource(id);
    });

    // The CVC goes only where the cardholder gives the card: ecommerce, and the first customer-initiated
    // payment of a card on file or a subscription; never with a merchant-initiated or subsequent one.
    // A network token's cryptogram likewise: one authorization with the cardholder, then forgotten.
    const present = cardholderPresent(initiationOf(body));
    const cvc = present ? token.cvc : undefined;
    const cryptogram = present ? token.cryptogram : undefined;
    const cvcTokenId = cvc !== undefined || cryptogram !== undefined ? token.id : undefined;
    // A buyer's stored card charged by the merchant: the processors' tokens it carries (docs/buyers.md).
    const held = takesConnectionTokens(body, card)
      ? await this.connectionTokens.forPayment(who.tenantId, token.id)
      : [];
    for (let attempt = 1; ; attempt++) {
      const answer = await this.authorizeAt(
        connection,
        attempt,
        id,
        body,
        token,
        sessionId,
        { cvc, cryptogram, held },
        threeDSecure,
      );
      if (answer === UNANSWERED) return this.leftToSettlement(origin, id, cvcTokenId);
      // Failover only after an outcome that certainly moved no money, to the next candidate.
      const nextIndex =
        retryable(answer) && attempt < MAX_ATTEMPTS
          ? this.breaker.next(candidates, index + 1, this.clock.now().getTime())
          : -1;
      if (nextIndex < 0) return this.recordOutcome(origin, id, createdAt, answer, cvcTokenId);
      const next = candidates[nextIndex];
      const moved = await this.work.transaction(partOf(origin), async (change) => {
        const row = await this.journal.nextAttempt(
          change,
          who.tenantId,
          id,
          attempt,
          answeredOutcome(answer),
          next.row.id,
          this.clock.now(),
        );
        if (row)
          this.journal.log(
            change,
            id,
            'update',
            `Attempt ${attempt} ${answer.outcome} (${answer.errorCode ?? 'no code'}); attempt ${attempt + 1} at another connection`,
          );
        return row;
      });
      // Settled meanwhile (the calls outlasted STUCK_AFTER_MS): its outcome stands.
      if (!moved) return this.queries.get(who, id);
      index = nextIndex;
      connection = next;
    }
  }

  /**
   * One attempt's vendor call. UNANSWERED when the vendor may or may not have acted (the transaction stays
   * `processing` for settlement); nothing reached it (refused connection, HTTP 429): `processor_unavailable`.
   */
  private async authorizeAt(
    connection: UsableConnection,
    attempt: number,
    id: string,
    body: CreateTransactionDto,
    token: UsableToken,
    sessionId: string | null,
    { cvc, cryptogram, held }: { cvc?: string; cryptogram?: string; held: ConnectionTokenUse[] },
    threeDSecure: ThreeDSecureData | null,
  ): Promise<AuthorizeResult | typeof UNANSWERED> {
    const data = token.data as CardData;
    const formula = connection.row.formulaId;
    const cvvUnanswered = cvc === undefined ? 'not_provided' : 'unavailable';
    let result: AuthorizeResult;
    try {
      result = await withTimeout(
        this.processors.for(connection.row).authorize({
          credentials: connection.credentials,
          reconciliationId: this.journal.reconciliationId(id),
          attempt,
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
          ...(token.type === 'network_token' ? { networkToken: networkTokenOf(token, cryptogram) } : {}),
          ...initiationOf(body),
          ...attemptCredential(held, connection.row.id, body),
          threeDSessionId: sessionId,
          ...(threeDSecure ? { threeDSecureData: threeDSecure } : {}),
          threeDSecureEnabled: connection.row.threeDSecureEnabled,
        }),
      );
      // Authenticated elsewhere: the transaction says so, whatever the vendor answered of it.
      if (threeDSecure && !result.threeDSecure && result.outcome !== 'failed')
        result = {
          ...result,
          threeDSecure: { version: threeDSecure.version, status: 'complete', method: 'frictionless' },
        };
    } catch (error) {
      if (error instanceof ProcessorUnreachable) {
        this.logger.warn({ err: error, transaction_id: id, attempt }, 'the processor could not be reached');
        result = { ...processorFailure(null, cvvUnanswered), errorCode: 'processor_unavailable' };
      } else if (error instanceof ProcessorUnavailable) {
        // The vendor may have charged: the row stays `processing`, the settlement job asks the vendor.
        this.logger.warn(
          { err: error, transaction_id: id, attempt },
          'authorization unanswered by the processor; left to settlement',
        );
        this.metrics.paymentAttempted(formula, 'processing');
        return UNANSWERED;
      } else {
        this.logger.warn(
          { err: error, transaction_id: id, attempt },
          'authorization failed at the processor',
        );
        result = processorFailure(null, cvvUnanswered);
      }
    }
    const now = this.clock.now().getTime();
    this.breaker.record(connection.row.id, result.errorCode === 'processor_unavailable', now);
    this.metrics.paymentAttempted(formula, answeredOutcome(result).status);
    return result;
  }

  /** Writes the last attempt's outcome as the transaction's, with its audit row; answers the transaction. */
  private async recordOutcome(
    origin: RequestOrigin,
    id: string,
    createdAt: Date,
    result: AuthorizeResult,
    cvcTokenId: string | undefined,
  ): Promise<TransactionDto> {
    const who = origin.actor;
    try {
      // A challenge gets its buyer approval link (sealed with the tenant's key), made before the change.
      const approval =
        result.outcome === 'challenge'
          ? await this.approvals.issue(who.tenantId, id, createdAt, result.vendorAction)
          : undefined;
      const row = await this.work.transaction(partOf(origin), async (change) => {
        const row = await this.queries.lock(change, who.tenantId, id);
        const next = transition(stateOf(row), { kind: 'authorized', result }, this.clock.now());
        let updated: TransactionRow | undefined;
        // Settled by the job meanwhile (the call outlasted STUCK_AFTER_MS): its outcome stands.
        if (row.status === 'processing')
          updated = await this.journal.apply(
            change,
            who.tenantId,
            id,
            next,
            this.clock.now(),
            next.patch.approval === 'issue' ? approval : undefined,
          );
        // The CVC serves one authorization only (the token object does not change: no token event).
        if (cvcTokenId) await this.tokens.forgetCvc(change, who.tenantId, cvcTokenId);
        this.journal.log(change, id, 'create', `Transaction created: ${next.patch.status}`);
        return updated ?? row;
      });
      return await this.queries.toDto(who, row);
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

  /**
   * A transaction a `decline-early` rule declines: recorded `authorization_declined` with `declined_by_rule`,
   * no connection, no vendor call, no attempt; a retry with the same idempotency key answers it.
   */
  private async declinedByRule(
    origin: RequestOrigin,
    body: CreateTransactionDto,
    card: ChargedCard,
    sessionId: string | null,
    ruleId: string,
  ): Promise<TransactionDto> {
    const who = origin.actor;
    const id = randomUUID();
    const row = await this.work.transaction(partOf(origin), async (change) => {
      const row = await this.journal.insert(change, {
        ...newTransaction(who, id, body, card, sessionId, this.clock.now()),
        connectionId: null,
        declinedByRule: true,
      });
      await change.pinResource(id);
      this.journal.log(change, id, 'create', `Transaction created: authorization_declined by rule ${ruleId}`);
      return row;
    });
    return this.queries.toDto(who, row);
  }

  /**
   * The dry run of routing (`POST .../evaluate`): the same checks as a create without `connection_id`,
   * and the connections it would try, in order. Creates nothing and calls no vendor.
   */
  async evaluate(who: Principal, body: CreateTransactionDto): Promise<FlowEvaluationDto> {
    const refused: FieldErrors = {};
    if (body.connection_id !== undefined)
      addFieldError(refused, 'connection_id', 'evaluate takes no connection_id: the rules choose');
    const checked = await this.check(who, body, refused);
    body = checked.body;
    const decision = await this.routing.decide(who.tenantId, body, checked.card.token);
    if (decision.declined) return { declined: true, rule_id: decision.ruleId, connections: [] };
    const usable = await this.routing.usable(
      who.tenantId,
      decision.candidates,
      body,
      checked.card.token.type,
    );
    return {
      declined: false,
      rule_id: decision.ruleId,
      connections: usable.map((c) => connectionDto(c.row, { withMethod: true })),
    };
  }

  /**
   * The checks a create and its dry run share, in their order: `three_d_session_id` (alone), then the
   * body's own fields and the card, every refusal named by its field and thrown together with those the
   * caller found first (`errors`).
   */
  private async check(
    who: Principal,
    body: CreateTransactionDto,
    errors: FieldErrors = {},
  ): Promise<CheckedRequest> {
    const sessionId = threeDSessionId(body.three_d_session_id);
    if (body.is_subsequent_payment && !body.previous_scheme_transaction_id)
      addFieldError(errors, 'previous_scheme_transaction_id', 'required when is_subsequent_payment is true');
    checkMetadata(body.metadata, errors);
    const threeDSecure = threeDSecureData(body.three_d_secure_data, errors);
    const card = await this.cards.resolve(who, body, errors);
    if (Object.keys(errors).length || !card) throw new ValidationException(errors);
    return {
      body: { ...body, token: card.token.id, payment_source: card.paymentSource },
      card,
      sessionId,
      threeDSecure,
    };
  }

  /**
   * An operation whose outcome the vendor did not tell: the transaction stays `processing` (the job
   * settles it once it is STUCK_AFTER_MS old), a CVC sent is forgotten all the same, and the caller
   * gets the transaction as it stands.
   */
  private async leftToSettlement(
    origin: RequestOrigin,
    id: string,
    cvcTokenId?: string,
  ): Promise<TransactionDto> {
    const who = origin.actor;
    await this.work.transaction(partOf(origin), async (change) => {
      if (cvcTokenId) await this.tokens.forgetCvc(change, who.tenantId, cvcTokenId);
      this.journal.log(change, id, 'update', 'Processor did not answer: processing, left to settlement');
    });
    return this.queries.get(who, id);
  }
}
