import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change, Queryable } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
import { SqlParams } from '../../../database/sql';
import { columnsOf, type RowOf, queryRows } from '../../../database/table';
import { BuyerEntity } from './entities/buyer.entity';
import type { TokenCardColumns } from '../../tokens/token-answer';
import { BuyerPaymentMethodEntity } from './entities/buyer-payment-method.entity';

export type BuyerRow = RowOf<BuyerEntity>;
export type StoredCardRow = RowOf<BuyerPaymentMethodEntity>;

/** A stored card with what its answer shows of its token (scheme, masked number and expiry). */
export type PaymentMethodRow = StoredCardRow & TokenCardColumns;

/** A buyer's names as create and update write them (update: only the fields given). */
export interface BuyerValues {
  externalIdentifier?: string | null;
  displayName?: string | null;
}

export interface BuyerFilters {
  externalIdentifier?: string;
  /** The start of the display name or of the external identifier, in any case. */
  search?: string;
}

const COLUMNS = columnsOf(BuyerEntity);
const CARD_COLUMNS = columnsOf(BuyerPaymentMethodEntity, 'm');
/** A stored card with its token's shown details; the token must still be live. */
const SELECT_METHOD = `SELECT ${CARD_COLUMNS}, t.card_brand, t.mask
  FROM buyer_payment_methods m JOIN tokens t ON t.tenant_id = m.tenant_id AND t.id = m.token_id`;
const LIVE = `(t.expires_at IS NULL OR t.expires_at > $3)`;
/** Most recently used first; never used: most recently added. */
const METHOD_ORDER = `ORDER BY coalesce(m.last_used_at, m.created_at) DESC, m.token_id`;

/** An UPDATE or DELETE answering its rows (pg answers those with a count besides; a SELECT answers rows alone). */
const written = (write: string): string => `WITH written AS (${write}) SELECT * FROM written`;

const prefix = (text: string): string => `${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Examples for the SQL snapshots (`@GenerateSql`). */
const TENANT = '00000000-0000-4000-8000-000000000001';
const BUYER = '00000000-0000-4000-8000-000000000005';
const TOKEN = '00000000-0000-4000-8000-000000000006';
const FINGERPRINT = 'FpExample';
const AT = new Date('2026-01-02T03:04:05.000Z');

/**
 * Buyers and their stored cards: every statement on `buyers` and `buyer_payment_methods`. Writes run in
 * the change they are given; reads outside a change on the pool.
 */
@Injectable()
export class BuyersRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Creates a buyer; undefined when its external identifier is taken in the tenant (nothing written). */
  @GenerateSql({
    change: true,
    params: [TENANT, BUYER, { externalIdentifier: 'cus-1', displayName: 'Ada' }, AT],
  })
  async insert(
    change: Change,
    tenantId: string,
    id: string,
    values: BuyerValues,
    now: Date,
  ): Promise<BuyerRow | undefined> {
    const rows = await queryRows<BuyerRow>(
      change,
      `INSERT INTO buyers (tenant_id, id, external_identifier, display_name, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $5)
       ON CONFLICT ON CONSTRAINT buyers_external_identifier_key DO NOTHING RETURNING ${COLUMNS}`,
      [tenantId, id, values.externalIdentifier ?? null, values.displayName ?? null, now],
    );
    return rows[0];
  }

  @GenerateSql({ params: [TENANT, BUYER] })
  async find(tenantId: string, id: string, q: Queryable = this.dataSource): Promise<BuyerRow | undefined> {
    const rows = await queryRows<BuyerRow>(
      q,
      `SELECT ${COLUMNS} FROM buyers WHERE tenant_id = $1 AND id = $2`,
      [tenantId, id],
    );
    return rows[0];
  }

  /** A page of the tenant's buyers, newest first, and how many match in all. */
  @GenerateSql(
    { params: [TENANT, {}, { skip: 0, take: 20 }], answers: [[], [{ n: 0 }]] },
    {
      name: 'filtered',
      params: [TENANT, { externalIdentifier: 'cus-1', search: 'ad' }, { skip: 20, take: 20 }],
      answers: [[], [{ n: 0 }]],
    },
  )
  async page(
    tenantId: string,
    filters: BuyerFilters,
    page: { skip: number; take: number },
  ): Promise<{ rows: BuyerRow[]; total: number }> {
    const p = new SqlParams();
    const where = [`tenant_id = ${p.add(tenantId)}`];
    if (filters.externalIdentifier !== undefined)
      where.push(`external_identifier = ${p.add(filters.externalIdentifier)}`);
    if (filters.search !== undefined) {
      const like = p.add(prefix(filters.search));
      where.push(`(lower(display_name) LIKE ${like} OR lower(external_identifier) LIKE ${like})`);
    }
    const filter = where.join(' AND ');
    const [rows, [{ n }]] = await Promise.all([
      queryRows<BuyerRow>(
        this.dataSource,
        `SELECT ${COLUMNS} FROM buyers WHERE ${filter} ORDER BY created_at DESC, id DESC
          LIMIT ${p.add(page.take)} OFFSET ${p.add(page.skip)}`,
        p.values,
      ),
      queryRows<{ n: number }>(
        this.dataSource,
        `SELECT count(*)::int AS n FROM buyers WHERE ${filter}`,
        p.values.slice(0, p.values.length - 2),
      ),
    ]);
    return { rows, total: n };
  }

  /** Sets the names given (a name left out keeps its value); undefined when no such buyer. */
  @GenerateSql({ change: true, params: [TENANT, BUYER, { displayName: null }, AT] })
  async update(
    change: Change,
    tenantId: string,
    id: string,
    values: BuyerValues,
    now: Date,
  ): Promise<BuyerRow | undefined> {
    const p = new SqlParams();
    const sets = [`updated_at = ${p.add(now)}`];
    if (values.externalIdentifier !== undefined)
      sets.push(`external_identifier = ${p.add(values.externalIdentifier)}`);
    if (values.displayName !== undefined) sets.push(`display_name = ${p.add(values.displayName)}`);
    const rows = await queryRows<BuyerRow>(
      change,
      written(`UPDATE buyers SET ${sets.join(', ')} WHERE tenant_id = ${p.add(tenantId)} AND id = ${p.add(id)}
        RETURNING ${COLUMNS}`),
      p.values,
    );
    return rows[0];
  }

  /** Deletes a buyer and (foreign key) its stored cards; answers it as it was, undefined when none. */
  @GenerateSql({ change: true, params: [TENANT, BUYER] })
  async delete(change: Change, tenantId: string, id: string): Promise<BuyerRow | undefined> {
    const rows = await queryRows<BuyerRow>(
      change,
      written(`DELETE FROM buyers WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`),
      [tenantId, id],
    );
    return rows[0];
  }

  /**
   * Stores a card token for a buyer; false when nothing was written: the token is stored already (for
   * this buyer or another), the buyer has a card of the same fingerprint, or the buyer is gone.
   */
  @GenerateSql({ change: true, params: [TENANT, BUYER, TOKEN, FINGERPRINT, AT] })
  async attach(
    change: Change,
    tenantId: string,
    buyerId: string,
    tokenId: string,
    fingerprint: string,
    now: Date,
  ): Promise<boolean> {
    const rows = await queryRows<Pick<StoredCardRow, 'token_id'>>(
      change,
      `INSERT INTO buyer_payment_methods (tenant_id, token_id, buyer_id, fingerprint, created_at)
       SELECT b.tenant_id, $3, b.id, $4, $5 FROM buyers b WHERE b.tenant_id = $1 AND b.id = $2
       ON CONFLICT DO NOTHING RETURNING token_id`,
      [tenantId, buyerId, tokenId, fingerprint, now],
    );
    return rows.length > 0;
  }

  /**
   * The buyers of these external identifiers, made where missing (no names; an import's): their ids by
   * external identifier. Concurrent creators meet on the unique key, and each reads the one buyer.
   */
  @GenerateSql({ change: true, params: [TENANT, ['cus-1', 'cus-2'], AT] })
  async ensureByExternalIds(
    change: Change,
    tenantId: string,
    externalIds: string[],
    now: Date,
  ): Promise<Map<string, string>> {
    if (!externalIds.length) return new Map();
    const rows = await queryRows<Pick<BuyerRow, 'id' | 'external_identifier'>>(
      change,
      `WITH made AS (
         INSERT INTO buyers (tenant_id, id, external_identifier, display_name, created_at, updated_at)
         SELECT $1, gen_random_uuid(), e, NULL, $3, $3 FROM unnest($2::varchar[]) AS e
         ON CONFLICT ON CONSTRAINT buyers_external_identifier_key DO NOTHING
         RETURNING id, external_identifier)
       SELECT id, external_identifier FROM made
       UNION ALL
       SELECT id, external_identifier FROM buyers WHERE tenant_id = $1 AND external_identifier = ANY($2::varchar[])`,
      [tenantId, [...new Set(externalIds)], now],
    );
    return new Map(rows.map((row) => [row.external_identifier!, row.id]));
  }

  /**
   * Stores card tokens for buyers, many at once (an import's batch), with the rules of `attach`: a
   * token already stored, or a card the buyer already has, is left as it is. Answers the buyer each of
   * the tokens is stored for once the statement has run (whoever stored it), by token.
   */
  @GenerateSql({
    change: true,
    params: [TENANT, [{ buyerId: BUYER, tokenId: TOKEN, fingerprint: FINGERPRINT }], AT],
  })
  async attachMany(
    change: Change,
    tenantId: string,
    cards: { buyerId: string; tokenId: string; fingerprint: string }[],
    now: Date,
  ): Promise<Map<string, string>> {
    if (!cards.length) return new Map();
    // The insert's rows and the rows stored before it (one snapshot: the second part sees only those).
    const rows = await queryRows<Pick<StoredCardRow, 'token_id' | 'buyer_id'>>(
      change,
      `WITH stored AS (
         INSERT INTO buyer_payment_methods (tenant_id, token_id, buyer_id, fingerprint, created_at)
         SELECT $1, c.token_id, c.buyer_id, c.fingerprint, $3
           FROM unnest($2::varchar[], $4::uuid[], $5::varchar[]) AS c(token_id, buyer_id, fingerprint)
         ON CONFLICT DO NOTHING RETURNING token_id, buyer_id)
       SELECT token_id, buyer_id FROM stored
       UNION ALL
       SELECT token_id, buyer_id FROM buyer_payment_methods WHERE tenant_id = $1 AND token_id = ANY($2::varchar[])`,
      [
        tenantId,
        cards.map((c) => c.tokenId),
        now,
        cards.map((c) => c.buyerId),
        cards.map((c) => c.fingerprint),
      ],
    );
    return new Map(rows.map((row) => [row.token_id, row.buyer_id]));
  }

  /**
   * Removes the buyer's stored copies of a card whose tokens have expired and wait for the retention job:
   * the card stored again takes their place.
   */
  @GenerateSql({ change: true, params: [TENANT, BUYER, FINGERPRINT, AT] })
  async dropExpired(
    change: Change,
    tenantId: string,
    buyerId: string,
    fingerprint: string,
    now: Date,
  ): Promise<void> {
    await change.query(
      written(`DELETE FROM buyer_payment_methods m USING tokens t
        WHERE m.tenant_id = $1 AND m.buyer_id = $2 AND m.fingerprint = $3
          AND t.tenant_id = m.tenant_id AND t.id = m.token_id AND t.expires_at <= $4 RETURNING m.token_id`),
      [tenantId, buyerId, fingerprint, now],
    );
  }

  /** Where a token is stored, if it is. */
  @GenerateSql({ params: [TENANT, TOKEN] })
  async findStored(
    tenantId: string,
    tokenId: string,
    q: Queryable = this.dataSource,
  ): Promise<StoredCardRow | undefined> {
    const rows = await queryRows<StoredCardRow>(
      q,
      `SELECT ${columnsOf(BuyerPaymentMethodEntity)} FROM buyer_payment_methods WHERE tenant_id = $1 AND token_id = $2`,
      [tenantId, tokenId],
    );
    return rows[0];
  }

  /** One stored card of the buyer, by token or else by the fingerprint of its card, with its token's details. */
  @GenerateSql({ change: true, params: [TENANT, BUYER, AT, TOKEN, FINGERPRINT] })
  async findMethod(
    change: Change,
    tenantId: string,
    buyerId: string,
    now: Date,
    tokenId: string,
    fingerprint: string,
  ): Promise<PaymentMethodRow | undefined> {
    const rows = await queryRows<PaymentMethodRow>(
      change,
      `${SELECT_METHOD} WHERE m.tenant_id = $1 AND m.buyer_id = $2 AND ${LIVE}
          AND (m.token_id = $4 OR m.fingerprint = $5)
        ORDER BY m.token_id = $4 DESC LIMIT 1`,
      [tenantId, buyerId, now, tokenId, fingerprint],
    );
    return rows[0];
  }

  /** The buyer's stored cards whose tokens are live, most recently used first (never used: newest first). */
  @GenerateSql({ params: [TENANT, BUYER, AT] })
  listMethods(tenantId: string, buyerId: string, now: Date): Promise<PaymentMethodRow[]> {
    return queryRows<PaymentMethodRow>(
      this.dataSource,
      `${SELECT_METHOD} WHERE m.tenant_id = $1 AND m.buyer_id = $2 AND ${LIVE} ${METHOD_ORDER}`,
      [tenantId, buyerId, now],
    );
  }

  /** Removes a stored card from its buyer (the token stays); false when it was not stored for that buyer. */
  @GenerateSql({ change: true, params: [TENANT, BUYER, TOKEN] })
  async detach(change: Change, tenantId: string, buyerId: string, tokenId: string): Promise<boolean> {
    const rows = await queryRows<Pick<StoredCardRow, 'token_id'>>(
      change,
      written(
        `DELETE FROM buyer_payment_methods WHERE tenant_id = $1 AND buyer_id = $2 AND token_id = $3 RETURNING token_id`,
      ),
      [tenantId, buyerId, tokenId],
    );
    return rows.length > 0;
  }

  /**
   * A successful transaction with a card: stores it for the buyer when asked (`store`; no duplicate, no
   * second buyer, nothing when the buyer is gone) and marks the stored card used. A piece of the change's
   * write statement: no round trip of its own, but when storing (the caller writes the buyer's audit row
   * only if a card was stored), the change's writes are sent at once (in its transaction) for the answer.
   * True when a card was stored.
   */
  @GenerateSql({ change: true, params: [TENANT, TOKEN, BUYER, true, AT] })
  async used(
    change: Change,
    tenantId: string,
    tokenId: string,
    buyerId: string | null,
    store: boolean,
    now: Date,
  ): Promise<boolean> {
    const storing = store && !!buyerId;
    if (storing && change.mode !== 'transaction')
      throw new Error('storing a card needs the answer before the change ends: a transaction change');
    let stored = false;
    await change.write(
      ({ p, name }) => {
        const [tenant, token, buyer, at] = [
          `${p.add(tenantId)}::uuid`,
          `${p.add(tokenId)}::varchar`,
          `${p.add(buyerId)}::uuid`,
          `${p.add(now)}::timestamptz`,
        ];
        const ctes = [
          // The stored card of this token, or the buyer's of the same card.
          `${name('used')} AS (UPDATE buyer_payment_methods m SET last_used_at = ${at} FROM tokens t
            WHERE t.tenant_id = ${tenant} AND t.id = ${token} AND m.tenant_id = ${tenant}
              AND (m.token_id = ${token} OR (m.buyer_id = ${buyer} AND m.fingerprint = t.fingerprint)))`,
        ];
        if (!storing) return { ctes };
        ctes.push(
          `${name('stored')} AS (INSERT INTO buyer_payment_methods (tenant_id, token_id, buyer_id, fingerprint, created_at, last_used_at)
           SELECT t.tenant_id, t.id, b.id, t.fingerprint, ${at}, ${at}
             FROM tokens t JOIN buyers b ON b.tenant_id = t.tenant_id AND b.id = ${buyer}
            WHERE t.tenant_id = ${tenant} AND t.id = ${token}
           ON CONFLICT DO NOTHING RETURNING token_id)`,
        );
        return { ctes, result: `EXISTS (SELECT 1 FROM ${name('stored')})` };
      },
      { then: (value) => (stored = value === true) },
    );
    if (storing) await change.flush();
    return stored;
  }
}
