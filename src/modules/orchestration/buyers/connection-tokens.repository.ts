import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change, Queryable } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
import { multiRowInsert } from '../../../database/sql';
import { columnNamesOf, columnsOf, type RowOf, queryRows } from '../../../database/table';
import { BuyerConnectionTokenEntity } from './entities/buyer-connection-token.entity';

/** A processor's token on a stored card, as stored (sealed). */
export type ConnectionTokenRow = RowOf<BuyerConnectionTokenEntity>;
/** What an answer shows of one: everything but the sealed token. */
export type ShownConnectionTokenRow = Omit<ConnectionTokenRow, 'sealed_token'>;

/** A live connection of the tenant, as the checks of a connection token need it. */
export interface ConnectionFormulaRow {
  id: string;
  formula_id: string;
}

const COLUMNS = columnNamesOf(BuyerConnectionTokenEntity);
const SHOWN = columnsOf(BuyerConnectionTokenEntity, undefined, { except: ['sealed_token'] });
const ALL = columnsOf(BuyerConnectionTokenEntity);
const ORDER = `ORDER BY token_id, position, connection_id`;

/** Examples for the SQL snapshots (`@GenerateSql`). */
const TENANT = '00000000-0000-4000-8000-000000000001';
const TOKEN = '00000000-0000-4000-8000-000000000006';
const CONNECTION = '00000000-0000-4000-8000-000000000007';
const AT = new Date('2026-01-02T03:04:05.000Z');
const EXAMPLE: ConnectionTokenRow = {
  tenant_id: TENANT,
  token_id: TOKEN,
  connection_id: CONNECTION,
  sealed_token: Buffer.from('sealed'),
  token_last4: 'wxyz',
  connection_customer: 'cus_example',
  network_transaction_id: '123456789012345',
  position: 0,
  created_at: AT,
};

/**
 * Processors' tokens on buyers' stored cards: every statement on `buyer_connection_tokens`, and the
 * look-up of the connections they name. Writes run in the change they are given; reads on the change
 * when given one (the import job reads inside its own), else on the pool.
 */
@Injectable()
export class ConnectionTokensRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Writes each entry: a new one is added, one at a connection the card has a token for already replaces
   * it (its creation time is kept).
   */
  @GenerateSql({ change: true, params: [[EXAMPLE]] })
  async upsert(change: Change, rows: ConnectionTokenRow[]): Promise<void> {
    if (!rows.length) return;
    const { sql, params } = multiRowInsert(
      'buyer_connection_tokens',
      COLUMNS,
      rows.map((row) => COLUMNS.map((column) => row[column])),
    );
    await change.query(
      `${sql} ON CONFLICT (tenant_id, token_id, connection_id) DO UPDATE SET
         sealed_token = excluded.sealed_token, token_last4 = excluded.token_last4,
         connection_customer = excluded.connection_customer,
         network_transaction_id = excluded.network_transaction_id, position = excluded.position`,
      params,
    );
  }

  /** Removes the card's tokens at every connection but those named (all of them when none is). */
  @GenerateSql({ change: true, params: [TENANT, TOKEN, [CONNECTION]] })
  async keepOnly(change: Change, tenantId: string, tokenId: string, connectionIds: string[]): Promise<void> {
    await change.query(
      `WITH gone AS (DELETE FROM buyer_connection_tokens
          WHERE tenant_id = $1 AND token_id = $2 AND NOT (connection_id = ANY($3::uuid[])) RETURNING connection_id)
       SELECT count(*)::int AS n FROM gone`,
      [tenantId, tokenId, connectionIds],
    );
  }

  /** What the answers show of the tokens of these stored cards, in each card's order. */
  @GenerateSql({ params: [TENANT, [TOKEN]] })
  shown(
    tenantId: string,
    tokenIds: string[],
    q: Queryable = this.dataSource,
  ): Promise<ShownConnectionTokenRow[]> {
    if (!tokenIds.length) return Promise.resolve([]);
    return queryRows<ShownConnectionTokenRow>(
      q,
      `SELECT ${SHOWN} FROM buyer_connection_tokens WHERE tenant_id = $1 AND token_id = ANY($2::varchar[]) ${ORDER}`,
      [tenantId, tokenIds],
    );
  }

  /** The tokens of one stored card, sealed, in its order: what a payment with the card reads. */
  @GenerateSql({ params: [TENANT, TOKEN] })
  forCard(tenantId: string, tokenId: string): Promise<ConnectionTokenRow[]> {
    return queryRows<ConnectionTokenRow>(
      this.dataSource,
      `SELECT ${ALL} FROM buyer_connection_tokens WHERE tenant_id = $1 AND token_id = $2 ${ORDER}`,
      [tenantId, tokenId],
    );
  }

  /** Which of these connections the tenant has (not deleted), with their formulas. */
  @GenerateSql({ params: [TENANT, [CONNECTION]] })
  connections(
    tenantId: string,
    ids: string[],
    q: Queryable = this.dataSource,
  ): Promise<ConnectionFormulaRow[]> {
    if (!ids.length) return Promise.resolve([]);
    return queryRows<ConnectionFormulaRow>(
      q,
      `SELECT id, formula_id FROM connections WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL`,
      [tenantId, ids],
    );
  }
}
