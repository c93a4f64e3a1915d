import type { Principal } from '../../../common/auth/principal';
import { initiationOf } from '../processors/payment-initiation';
import type { ChargedCard } from './charged-card';
import { paymentMethodOf } from './transaction-checks';
import type { CreateTransactionDto } from './transaction.dto';
import type { NewTransaction } from './transactions.repository';

/**
 * A new transaction's columns from its request and card, created at `now`, `processing` its authorization
 * at the connection the caller adds.
 */
export function newTransaction(
  who: Principal,
  id: string,
  body: CreateTransactionDto,
  { token, buyer }: ChargedCard,
  sessionId: string | null,
  now: Date,
): Omit<NewTransaction, 'connectionId'> {
  return {
    id,
    tenantId: who.tenantId,
    tokenId: token.id,
    intent: body.intent ?? 'authorize',
    amount: body.amount,
    currency: body.currency,
    country: body.country ?? null,
    externalIdentifier: body.external_identifier ?? null,
    metadata: body.metadata ?? null,
    ...initiationOf(body),
    previousSchemeTransactionId: body.previous_scheme_transaction_id ?? null,
    threeDSessionId: sessionId,
    paymentMethod: paymentMethodOf(token),
    buyer: buyer
      ? { id: buyer.id, externalIdentifier: buyer.external_identifier, displayName: buyer.display_name }
      : null,
    storePaymentMethod: !!(body.store && buyer),
    createdBy: who.applicationId,
    createdAt: now,
  };
}
