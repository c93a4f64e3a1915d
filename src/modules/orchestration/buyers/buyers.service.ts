import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../../common/auth/principal';
import { ValidationException } from '../../../common/errors/domain.exception';
import type { EventType } from '../../../common/events/event-outbox';
import { Clock } from '../../../common/jobs/clock';
import { offsetOf, offsetPage } from '../../../common/pagination/offset-pagination';
import { type Change, partOf } from '../../../common/unit-of-work/change';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { CardEnumerationRefused, normalizeTokenId, TokensService } from '../../tokens/tokens.service';
import { OrchestrationException } from '../orchestration.errors';
import { schemeOf } from '../formulas/card-schemes';
import type {
  BuyerDto,
  ConnectionTokenDto,
  BuyerPageDto,
  BuyerRequestDto,
  ListBuyersQueryDto,
  StoredPaymentMethodDto,
  StorePaymentMethodDto,
} from './buyer.dto';
import { BuyerRow, BuyersRepository, BuyerValues, PaymentMethodRow } from './buyers.repository';
import { connectionTokenDto } from './connection-tokens';
import { ConnectionTokensRepository } from './connection-tokens.repository';

export function buyerDto(row: BuyerRow): BuyerDto {
  return {
    type: 'buyer',
    id: row.id,
    external_identifier: row.external_identifier,
    display_name: row.display_name,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A stored card as answered: its details from its token's mask; `expired` once its expiry month has passed. */
export function paymentMethodDto(
  row: PaymentMethodRow,
  now: Date,
  connectionTokens: ConnectionTokenDto[] = [],
): StoredPaymentMethodDto {
  const month = Number(row.mask?.expiration_month ?? 0);
  const year = Number(row.mask?.expiration_year ?? 0);
  const expired = year * 12 + month < now.getUTCFullYear() * 12 + now.getUTCMonth() + 1;
  return {
    type: 'payment-method',
    id: row.token_id,
    method: 'card',
    buyer_id: row.buyer_id,
    scheme: schemeOf(row.card_brand),
    label: String(row.mask?.number ?? '').slice(-4),
    expiration_date: `${String(month).padStart(2, '0')}/${String(year % 100).padStart(2, '0')}`,
    status: expired ? 'expired' : 'active',
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at ? row.last_used_at.toISOString() : null,
    connection_tokens: connectionTokens,
  };
}

/** A unique key of `buyers` refused the write (a concurrent request took the external identifier). */
const takenIdentifier = (error: unknown): boolean => {
  const e = error as {
    code?: string;
    constraint?: string;
    driverError?: { code?: string; constraint?: string };
  };
  const pg = e.driverError ?? e;
  return pg.code === '23505' && pg.constraint === 'buyers_external_identifier_key';
};

const identifierTaken = (): OrchestrationException =>
  OrchestrationException.conflict('Another buyer of the tenant has this external_identifier.');

/**
 * Buyers and the cards stored for them (docs/buyers.md). Each write is one change with its audit row
 * (`buyer`) and its webhook event (`buyer:*`, data the buyer as GET answers it). Storing a card tells
 * the caller whether the buyer already has that card (the answer is the stored one), which says as much
 * as the card's fingerprint: the card enumeration guard counts it as it counts a read that shows one.
 */
@Injectable()
export class BuyersService {
  constructor(
    private readonly buyers: BuyersRepository,
    private readonly tokens: TokensService,
    private readonly connectionTokens: ConnectionTokensRepository,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
  ) {}

  async create(origin: RequestOrigin, body: BuyerRequestDto): Promise<BuyerDto> {
    // One change, which stores the idempotent answer with the buyer (a retry after a crash answers it).
    return this.work.transaction(origin, async (change) => {
      const row = await this.buyers.insert(
        change,
        origin.actor.tenantId,
        randomUUID(),
        valuesOf(body),
        this.clock.now(),
      );
      if (!row) throw identifierTaken();
      this.record(change, 'buyer:created', row, 'create', 'Buyer created');
      return buyerDto(row);
    });
  }

  async list(who: Principal, query: ListBuyersQueryDto): Promise<BuyerPageDto> {
    const { rows, total } = await this.buyers.page(
      who.tenantId,
      { externalIdentifier: query.external_identifier, search: query.search },
      offsetOf(query),
    );
    return offsetPage(rows.map(buyerDto), total, query);
  }

  async get(who: Principal, id: string): Promise<BuyerDto> {
    return buyerDto(await this.found(who.tenantId, id));
  }

  async update(origin: RequestOrigin, id: string, body: BuyerRequestDto): Promise<BuyerDto> {
    try {
      return await this.work.transaction(origin, async (change) => {
        const row = await this.buyers.update(
          change,
          origin.actor.tenantId,
          id,
          valuesOf(body),
          this.clock.now(),
        );
        if (!row) throw OrchestrationException.buyerNotFound();
        this.record(change, 'buyer:updated', row, 'update', 'Buyer updated');
        return buyerDto(row);
      });
    } catch (error) {
      throw takenIdentifier(error) ? identifierTaken() : error;
    }
  }

  /** Deletes the buyer and detaches its stored cards (their tokens stay; its transactions keep showing it). */
  async delete(origin: RequestOrigin, id: string): Promise<void> {
    await this.work.transaction(partOf(origin), async (change) => {
      const row = await this.buyers.delete(change, origin.actor.tenantId, id);
      if (!row) throw OrchestrationException.buyerNotFound();
      this.record(change, 'buyer:deleted', row, 'delete', 'Buyer deleted');
    });
  }

  /**
   * Stores a card token for the buyer and answers the stored card; `answered(false)` when the buyer
   * already had it, or a card of the same fingerprint (the answer is that one), called inside the change
   * so that the idempotent answer stored with it has the right status. A token stored for another buyer
   * is a 409.
   */
  async attach(
    origin: RequestOrigin,
    buyerId: string,
    body: StorePaymentMethodDto,
    answered: (created: boolean) => void = () => undefined,
  ): Promise<StoredPaymentMethodDto> {
    const who = origin.actor;
    await this.found(who.tenantId, buyerId);
    const token = await this.tokens.usableRow(who, body.token);
    if (!token) throw ValidationException.field('token', 'no such token');
    if (token.type !== 'card') throw ValidationException.field('token', 'the token must be of type card');
    try {
      return await this.work.transaction(origin, async (change) => {
        if (!(await this.tokens.comparable(who, token, change)))
          throw new CardEnumerationRefused(
            'Too many distinct card numbers sharing their first six and last four digits were compared with ' +
              'stored cards in this tenant within 24 hours; nothing was stored.',
          );
        const now = this.clock.now();
        await this.buyers.dropExpired(change, who.tenantId, buyerId, token.fingerprint, now);
        const created = await this.buyers.attach(
          change,
          who.tenantId,
          buyerId,
          token.id,
          token.fingerprint,
          now,
        );
        if (!created) {
          const stored = await this.buyers.findStored(who.tenantId, token.id, change);
          if (stored && stored.buyer_id !== buyerId)
            throw OrchestrationException.conflict('The token is stored for another buyer.');
        }
        const row = await this.buyers.findMethod(
          change,
          who.tenantId,
          buyerId,
          now,
          token.id,
          token.fingerprint,
        );
        // Not written and nothing to answer: the buyer was deleted meanwhile.
        if (!row) throw OrchestrationException.buyerNotFound();
        if (created)
          change.audit({
            entityType: 'buyer',
            entityId: buyerId,
            operation: 'update',
            message: 'Payment method stored',
          });
        answered(created);
        // The card already stored may carry processors' tokens (a new one has none).
        const shown = created ? [] : await this.connectionTokens.shown(who.tenantId, [row.token_id], change);
        return paymentMethodDto(row, now, shown.map(connectionTokenDto));
      });
    } catch (error) {
      if (error instanceof CardEnumerationRefused) await this.tokens.fingerprintRefused(who);
      throw error;
    }
  }

  async listMethods(who: Principal, buyerId: string): Promise<StoredPaymentMethodDto[]> {
    await this.found(who.tenantId, buyerId);
    const now = this.clock.now();
    const rows = await this.buyers.listMethods(who.tenantId, buyerId, now);
    const shown = await this.connectionTokens.shown(
      who.tenantId,
      rows.map((row) => row.token_id),
    );
    return rows.map((row) =>
      paymentMethodDto(row, now, shown.filter((t) => t.token_id === row.token_id).map(connectionTokenDto)),
    );
  }

  async detach(origin: RequestOrigin, buyerId: string, tokenId: string): Promise<void> {
    const tenantId = origin.actor.tenantId;
    await this.found(tenantId, buyerId);
    await this.work.transaction(partOf(origin), async (change) => {
      if (!(await this.buyers.detach(change, tenantId, buyerId, normalizeTokenId(tokenId))))
        throw OrchestrationException.paymentMethodNotFound();
      change.audit({
        entityType: 'buyer',
        entityId: buyerId,
        operation: 'update',
        message: 'Payment method removed',
      });
    });
  }

  /**
   * An import's batch of stored cards (docs/migration.md), in the import's change: the buyers of the
   * external identifiers given, made where missing, each store the card token named, with the rules of
   * `attach` (a token stored already, or a card its buyer has, stays as it is). No audit row or event per
   * buyer or card: the import's job records its own. Answers, card by card, whether its token is left
   * stored for another buyer than the one given (a token is stored for one buyer at most).
   */
  async storeImported(
    change: Change,
    tenantId: string,
    cards: { buyerExternalId: string; tokenId: string; fingerprint: string }[],
    now: Date,
  ): Promise<boolean[]> {
    if (!cards.length) return [];
    const buyers = await this.buyers.ensureByExternalIds(
      change,
      tenantId,
      cards.map((c) => c.buyerExternalId),
      now,
    );
    const owners = await this.buyers.attachMany(
      change,
      tenantId,
      cards.map((c) => ({
        buyerId: buyers.get(c.buyerExternalId)!,
        tokenId: c.tokenId,
        fingerprint: c.fingerprint,
      })),
      now,
    );
    return cards.map((card) => {
      const owner = owners.get(card.tokenId);
      return owner !== undefined && owner !== buyers.get(card.buyerExternalId);
    });
  }

  /** The buyer, or undefined (another tenant's is never told apart from none). */
  find(tenantId: string, id: string): Promise<BuyerRow | undefined> {
    return this.buyers.find(tenantId, id);
  }

  /** The buyer a stored token belongs to, if it is stored. */
  async ownerOf(tenantId: string, tokenId: string): Promise<string | undefined> {
    return (await this.buyers.findStored(tenantId, tokenId))?.buyer_id;
  }

  /** The token of the buyer's first stored card in list order (most recently used), if it has one. */
  async firstCard(tenantId: string, buyerId: string): Promise<string | undefined> {
    return (await this.buyers.listMethods(tenantId, buyerId, this.clock.now()))[0]?.token_id;
  }

  private async found(tenantId: string, id: string): Promise<BuyerRow> {
    const row = await this.buyers.find(tenantId, id);
    if (!row) throw OrchestrationException.buyerNotFound();
    return row;
  }

  private record(
    change: Change,
    type: EventType,
    row: BuyerRow,
    operation: 'create' | 'update' | 'delete',
    message: string,
  ): void {
    change.audit({ entityType: 'buyer', entityId: row.id, operation, message });
    change.emit({ tenantId: row.tenant_id, type, entityId: row.id, data: buyerDto(row) });
  }
}

function valuesOf(body: BuyerRequestDto): BuyerValues {
  return { externalIdentifier: body.external_identifier, displayName: body.display_name };
}
