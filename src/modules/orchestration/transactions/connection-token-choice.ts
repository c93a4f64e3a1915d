import type { ConnectionTokenUse } from '../buyers/connection-tokens.service';
import { initiationOf, merchantInitiatedOnFile } from '../processors/payment-initiation';
import type { AuthorizeRequest } from '../processors/processor.port';
import type { ChargedCard } from './charged-card';
import type { CreateTransactionDto } from './transaction.dto';

/** Whether a payment may send a processor's token for its card: a buyer's stored card, charged by the merchant. */
export const takesConnectionTokens = (body: CreateTransactionDto, card: ChargedCard): boolean =>
  !!card.buyer && card.stored && card.token.type === 'card' && merchantInitiatedOnFile(initiationOf(body));

/**
 * What one attempt sends of the stored card's processors' tokens (docs/buyers.md, "Connection tokens"):
 * at a connection the card has a token for, that token (and its customer) instead of the card; at any
 * other, the card, with the earlier network transaction id of the card's first token that has one when
 * the request gave none, so that the scheme links the payment to the mandate.
 */
export function attemptCredential(
  tokens: readonly ConnectionTokenUse[],
  connectionId: string,
  body: CreateTransactionDto,
): Pick<AuthorizeRequest, 'connectionToken' | 'previousSchemeTransactionId'> {
  const given = body.previous_scheme_transaction_id ?? null;
  const here = tokens.find((t) => t.connectionId === connectionId);
  if (here)
    return {
      connectionToken: { token: here.token, ...(here.customer ? { customer: here.customer } : {}) },
      previousSchemeTransactionId: given,
    };
  const mandate = tokens.find((t) => t.networkTransactionId !== null)?.networkTransactionId ?? null;
  return { previousSchemeTransactionId: given ?? mandate };
}
