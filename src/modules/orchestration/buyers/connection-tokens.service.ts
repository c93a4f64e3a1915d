import { Injectable } from '@nestjs/common';
import { open, seal } from '../../../common/crypto/aead';
import { TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import { ValidationException } from '../../../common/errors/domain.exception';
import { Clock } from '../../../common/jobs/clock';
import type { Change } from '../../../common/unit-of-work/change';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { normalizeTokenId } from '../../tokens/tokens.service';
import { OrchestrationException } from '../orchestration.errors';
import type { SetConnectionTokensDto, StoredPaymentMethodDto } from './buyer.dto';
import { BuyersRepository } from './buyers.repository';
import { paymentMethodDto } from './buyers.service';
import {
  connectionTokenDto,
  connectionTokenErrors,
  type ConnectionTokenEntry,
  lastFourOf,
} from './connection-tokens';
import { type ConnectionTokenRow, ConnectionTokensRepository } from './connection-tokens.repository';

export type { ConnectionTokenEntry } from './connection-tokens';

/** A processor's token of a stored card, opened, as a payment at its connection sends it. */
export interface ConnectionTokenUse {
  connectionId: string;
  token: string;
  customer: string | null;
  networkTransactionId: string | null;
}

/** Binds a sealed token to its row: moved to another tenant, card or connection, it no longer opens. */
const tokenAad = (tenantId: string, tokenId: string, connectionId: string): string =>
  `${tenantId}:${tokenId}:${connectionId}:connection-token`;

/**
 * Processors' tokens on buyers' stored cards (docs/buyers.md, "Connection tokens"): set by
 * `PUT /orchestration/buyers/{id}/payment-methods/{payment_method_id}/connection-tokens` (the whole list)
 * and by the import job (`record`, inside its own change), read masked with the stored card, and opened
 * for a merchant-initiated payment with the card. Each token is sealed under the tenant's key as a
 * connection's credentials are, and appears in no answer, audit message or log line.
 */
@Injectable()
export class ConnectionTokensService {
  constructor(
    private readonly tokens: ConnectionTokensRepository,
    private readonly buyers: BuyersRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
  ) {}

  /** Replaces the stored card's list with `body`'s and answers the stored card (404: no such buyer or card). */
  async set(
    origin: RequestOrigin,
    buyerId: string,
    paymentMethodId: string,
    body: SetConnectionTokensDto,
  ): Promise<StoredPaymentMethodDto> {
    const tenantId = origin.actor.tenantId;
    const tokenId = normalizeTokenId(paymentMethodId);
    if (!(await this.buyers.find(tenantId, buyerId))) throw OrchestrationException.buyerNotFound();
    const stored = await this.buyers.findStored(tenantId, tokenId);
    if (stored?.buyer_id !== buyerId) throw OrchestrationException.paymentMethodNotFound();
    // The tenant's keys before the change opens (sealing then reads nothing while it holds its connection).
    await this.tenantKeys.keysFor(tenantId);
    // One change, which stores the idempotent answer with the write (a retry after a crash answers it).
    return this.work.transaction(origin, async (change) => {
      await this.write(change, tenantId, tokenId, body.connection_tokens, { replace: true });
      const row = await this.buyers.findMethod(
        change,
        tenantId,
        buyerId,
        this.clock.now(),
        tokenId,
        stored.fingerprint,
      );
      if (row?.token_id !== tokenId) throw OrchestrationException.paymentMethodNotFound();
      change.audit({
        entityType: 'buyer',
        entityId: buyerId,
        operation: 'update',
        message: `Connection tokens set: ${body.connection_tokens.length}`,
      });
      const shown = await this.tokens.shown(tenantId, [tokenId], change);
      return paymentMethodDto(row, this.clock.now(), shown.map(connectionTokenDto));
    });
  }

  /**
   * For the import job, inside its change (a `transaction` change: it reads through it): adds the
   * entries to the stored card `paymentMethodId` (a card token stored for a buyer of `tenantId`), each
   * replacing the card's token at the same connection, and keeps the card's others. Throws a
   * ValidationException naming `connection_tokens[i].<field>` (a connection that is not the tenant's, a
   * token or customer not of its rail's form), or `payment_method_id` when the card is not stored; it
   * writes no audit row (the job's own rows tell of it). The messages never hold a token.
   */
  async record(
    change: Change,
    tenantId: string,
    paymentMethodId: string,
    entries: readonly ConnectionTokenEntry[],
  ): Promise<void> {
    const tokenId = normalizeTokenId(paymentMethodId);
    if (!(await this.buyers.findStored(tenantId, tokenId, change)))
      throw ValidationException.field('payment_method_id', 'the card is not stored for a buyer');
    await this.write(change, tenantId, tokenId, entries, { replace: false });
  }

  /** The stored card's tokens, opened, in its order: for a payment with the card (never logged). */
  async forPayment(tenantId: string, tokenId: string): Promise<ConnectionTokenUse[]> {
    const rows = await this.tokens.forCard(tenantId, tokenId);
    if (!rows.length) return [];
    const keys = await this.tenantKeys.keysFor(tenantId);
    return rows.map((row) => ({
      connectionId: row.connection_id,
      token: open(keys.encryption, row.sealed_token, tokenAad(tenantId, tokenId, row.connection_id)).toString(
        'utf8',
      ),
      customer: row.connection_customer,
      networkTransactionId: row.network_transaction_id,
    }));
  }

  /** Checks the entries against the tenant's connections and their rails, seals them and writes them. */
  private async write(
    change: Change,
    tenantId: string,
    tokenId: string,
    entries: readonly ConnectionTokenEntry[],
    { replace }: { replace: boolean },
  ): Promise<void> {
    const ids = entries.map((e) => e.connection_id.toLowerCase());
    const uuids = ids.filter((id) =>
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id),
    );
    const formulas = new Map(
      (await this.tokens.connections(tenantId, [...new Set(uuids)], change)).map((c) => [c.id, c.formula_id]),
    );
    const errors = connectionTokenErrors(entries, formulas);
    if (Object.keys(errors).length) throw new ValidationException(errors);
    const keys = await this.tenantKeys.keysFor(tenantId, change);
    const now = this.clock.now();
    const rows: ConnectionTokenRow[] = entries.map((entry, position) => ({
      tenant_id: tenantId,
      token_id: tokenId,
      connection_id: ids[position],
      sealed_token: seal(
        keys.encryption,
        Buffer.from(entry.token, 'utf8'),
        tokenAad(tenantId, tokenId, ids[position]),
      ),
      token_last4: lastFourOf(entry.token),
      connection_customer: entry.connection_customer ?? null,
      network_transaction_id: entry.network_transaction_id ?? null,
      position,
      created_at: now,
    }));
    if (replace) await this.tokens.keepOnly(change, tenantId, tokenId, ids);
    await this.tokens.upsert(change, rows);
  }
}
