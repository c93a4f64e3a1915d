import { Injectable } from '@nestjs/common';
import type { Principal } from '../../../common/auth/principal';
import { addFieldError, FieldErrors, forbidden } from '../../../common/errors/problem.exception';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import {
  CardEnumerationRefused,
  normalizeTokenId,
  TokensService,
  UsableToken,
} from '../../tokens/tokens.service';
import type { BuyerRow } from '../buyers/buyers.repository';
import { BuyersService } from '../buyers/buyers.service';
import { OrchestrationException } from '../orchestration.errors';
import type { CreateTransactionDto } from './transaction.dto';
import { paymentSourceOf, type PaymentSource } from '../processors/payment-initiation';

/** The card a transaction charges, the buyer it is for, and its payment source once defaulted. */
export interface ChargedCard {
  token: UsableToken;
  buyer: BuyerRow | null;
  paymentSource: PaymentSource;
  /** The token is stored for the buyer already (nothing to store, nothing to compare). */
  stored: boolean;
}

/**
 * Which card a transaction create (or its dry run) charges: `token`, or the first stored card of
 * `buyer_id` (docs/buyers.md). Every problem of the body is added to `errors`, named by its field; a key
 * without `orchestration:buyers:read` naming a buyer is a 403, a token stored for another buyer a 409.
 */
@Injectable()
export class ChargedCards {
  constructor(
    private readonly tokens: TokensService,
    private readonly buyers: BuyersService,
    private readonly work: UnitOfWork,
  ) {}

  async resolve(
    who: Principal,
    body: CreateTransactionDto,
    errors: FieldErrors,
  ): Promise<ChargedCard | undefined> {
    let buyer: BuyerRow | undefined;
    if (body.buyer_id !== undefined) {
      if (!who.permissions.includes('orchestration:buyers:read'))
        throw forbidden('Naming a buyer needs orchestration:buyers:read.');
      // Storing the card is what storing it directly is.
      if (body.store && !who.permissions.includes('orchestration:buyers:update'))
        throw forbidden('Storing the card for the buyer needs orchestration:buyers:update.');
      buyer = await this.buyers.find(who.tenantId, body.buyer_id.toLowerCase());
      if (!buyer) addFieldError(errors, 'buyer_id', 'no such buyer');
    } else if (body.store)
      addFieldError(errors, 'store', 'store needs buyer_id: the buyer to store the card for');
    let tokenId = body.token;
    let stored = false;
    if (tokenId === undefined) {
      if (body.buyer_id === undefined) addFieldError(errors, 'token', 'token is required without buyer_id');
      if (!buyer) return undefined;
      tokenId = await this.buyers.firstCard(who.tenantId, buyer.id);
      if (!tokenId) {
        addFieldError(errors, 'token', 'the buyer has no stored card');
        return undefined;
      }
      stored = true;
    } else if (buyer) {
      const owner = await this.buyers.ownerOf(who.tenantId, normalizeTokenId(tokenId));
      if (owner !== buyer.id && !body.store)
        addFieldError(errors, 'token', 'the token is not stored for this buyer (store: true stores it)');
      // Storing it would take it from another buyer: refused as storing it directly is.
      else if (owner && owner !== buyer.id)
        throw OrchestrationException.conflict('The token is stored for another buyer.');
      stored = owner === buyer.id;
    }
    const token = await this.cardToken(who, tokenId, errors);
    if (!token) return undefined;
    // A wallet's device PAN is not a card on file (stored cards are cards: docs/wallets.md).
    if (token.type === 'network_token' && body.store)
      addFieldError(errors, 'store', 'a network token is not stored for a buyer');
    const paymentSource = paymentSourceOf(body, !!buyer && body.token === undefined);
    return { token, buyer: buyer ?? null, paymentSource, stored };
  }

  /**
   * A card to be stored for the buyer once authorized: whether it is one the buyer has already says as
   * much as its fingerprint, so the card enumeration guard counts it now, before anything is created
   * (a 429 past its limit), as it counts a read that shows a fingerprint.
   */
  async countStoring(who: Principal, card: ChargedCard): Promise<void> {
    try {
      await this.work.transaction({ actor: who }, async (change) => {
        if (!(await this.tokens.comparable(who, card.token, change)))
          throw new CardEnumerationRefused(
            'Too many distinct card numbers sharing their first six and last four digits were compared with ' +
              'stored cards in this tenant within 24 hours; nothing was created.',
          );
      });
    } catch (error) {
      if (error instanceof CardEnumerationRefused) await this.tokens.fingerprintRefused(who);
      throw error;
    }
  }

  /** The token, with `token:use` checked on it through the caller's rules; unknown or not a card (or network token): a field error. */
  private async cardToken(who: Principal, id: string, errors: FieldErrors): Promise<UsableToken | undefined> {
    const token = await this.tokens.loadForUse(who, id);
    if (!token) addFieldError(errors, 'token', 'no such token');
    else if (token.type !== 'card' && token.type !== 'network_token')
      addFieldError(errors, 'token', 'the token must be of type card or network_token');
    else return token;
    return undefined;
  }
}
