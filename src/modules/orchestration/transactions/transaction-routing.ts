import { Injectable } from '@nestjs/common';
import { ValidationException } from '../../../common/errors/domain.exception';
import { addFieldError, FieldErrors } from '../../../common/errors/problem.exception';
import type { UsableToken } from '../../tokens/tokens.service';
import { ConnectionsService, UsableConnection } from '../connections/connections.service';
import { BIN_DIGITS, type TransactionFacts } from '../flows/flow-conditions';
import { FlowRulesService, RoutingDecision } from '../flows/flow-rules.service';
import { OrchestrationErrorCode, OrchestrationException } from '../orchestration.errors';
import type { CardData } from '../processors/processor.port';
import { initiationOf } from '../processors/payment-initiation';
import { checkAgainstConnection, paymentMethodOf } from './transaction-checks';
import type { CreateTransactionDto } from './transaction.dto';

/**
 * Where a transaction create goes (docs/routing.md): the facts the rules match on (the card's scheme and
 * first digits come from the stored card, never from the request, and are never shown), the rules'
 * decision, and of a route rule's connections those that can take the payment, in the rule's order.
 */
@Injectable()
export class TransactionRouting {
  constructor(
    private readonly flows: FlowRulesService,
    private readonly connections: ConnectionsService,
  ) {}

  /** What the rules decide for this request and card (with `connection_id`, the early declines only). */
  decide(tenantId: string, body: CreateTransactionDto, token: UsableToken): Promise<RoutingDecision> {
    return this.flows.decide(tenantId, factsOf(body, token), body.connection_id === undefined);
  }

  /**
   * The connection named by `connection_id`, checked against the request; its refusals are field errors
   * (`connection_id`, `currency`, `country`, `amount`, `intent`), thrown together.
   */
  async named(
    tenantId: string,
    body: CreateTransactionDto & { connection_id: string },
    tokenType?: string,
  ): Promise<UsableConnection> {
    const errors: FieldErrors = {};
    const connection = await this.connections.loadForPayment(tenantId, body.connection_id);
    if (!connection) addFieldError(errors, 'connection_id', 'no such connection');
    else checkAgainstConnection(connection, body, errors, tokenType);
    if (Object.keys(errors).length || !connection) throw new ValidationException(errors);
    return connection;
  }

  /**
   * Of a route rule's connections, those that exist, are active and available, accept the currency (and
   * the country when one is sent) and support what the request needs (a network token: `network_tokens`),
   * in the rule's order. A connection deleted since the rule was written is skipped.
   */
  async usable(
    tenantId: string,
    candidates: string[],
    body: CreateTransactionDto,
    tokenType?: string,
  ): Promise<UsableConnection[]> {
    const usable: UsableConnection[] = [];
    for (const id of candidates) {
      const connection = await this.connections.loadForPayment(tenantId, id);
      if (!connection) continue;
      const refusals: FieldErrors = {};
      checkAgainstConnection(connection, body, refusals, tokenType);
      if (!Object.keys(refusals).length) usable.push(connection);
    }
    return usable;
  }

  /** The candidates of a create without `connection_id`, or `no_connection_available` (nothing is created). */
  async candidates(
    tenantId: string,
    decision: RoutingDecision,
    body: CreateTransactionDto,
    tokenType?: string,
  ): Promise<UsableConnection[]> {
    const usable = decision.declined ? [] : await this.usable(tenantId, decision.candidates, body, tokenType);
    if (usable.length) return usable;
    const why =
      !decision.declined && decision.ruleId
        ? 'none of the connections of the matching rule can take this payment'
        : 'no routing rule matches this payment, and no connection_id was given';
    throw new OrchestrationException(
      OrchestrationErrorCode.NoConnectionAvailable,
      `No connection is available: ${why}.`,
      {
        connection_id: [why],
      },
    );
  }
}

/** The facts the rules match on. */
export function factsOf(body: CreateTransactionDto, token: UsableToken): TransactionFacts {
  const card = token.data as CardData;
  const { paymentSource, merchantInitiated } = initiationOf(body);
  return {
    amount: body.amount,
    currency: body.currency,
    country: body.country ?? null,
    scheme: paymentMethodOf(token).scheme,
    bin: String(card.number).slice(0, BIN_DIGITS),
    paymentSource,
    merchantInitiated,
    intent: body.intent ?? 'authorize',
    metadata: body.metadata ?? null,
  };
}
