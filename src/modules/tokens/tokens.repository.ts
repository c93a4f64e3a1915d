import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import { LOCK_KEYS } from '../../database/data-source';
import { GenerateSql } from '../../database/generate-sql';
import { multiRowInsert } from '../../database/sql';
import { SqlParams } from '../../database/sql';
import {
  assignmentsOf,
  columnNamesOf,
  columnsOf,
  recordsetOf,
  rowsOf,
  select,
  tableNameOf,
} from '../../database/table';
import type { Change, Queryable } from '../../common/unit-of-work/change';
import { TokenCvcEntity } from './entities/token-cvc.entity';
import { TokenSearchIndexEntity } from './entities/token-search-index.entity';
import { TokenEntity } from './entities/token.entity';
import {
  EXAMPLE_APPLICATION,
  EXAMPLE_NEW_TOKENS,
  EXAMPLE_NOW,
  EXAMPLE_TENANT,
  EXAMPLE_TOKEN,
} from './tokens.examples';
import type { NewTokens, SealedToken, TokenChanges, TokenRow } from './token-rows';

export type {
  NewTokens,
  SealedCvc,
  SealedToken,
  SearchIndexDigest,
  TokenChanges,
  TokenRow,
} from './token-rows';

/** A token with its sealed data; every column but the sealed data. */
const SEALED = rowsOf(TokenEntity);
const WITHOUT_DATA = rowsOf(TokenEntity, { except: ['data', 'data_key'] });

/** The columns of `tokens`, in the order `insert` gives their values. */
const TOKEN_COLUMNS = columnsOf(TokenEntity);

/** The columns of `tokens` with their types, for reading them from JSON (`jsonb_to_recordset`). */
const TOKEN_RECORD = recordsetOf(TokenEntity);

/** The same for the search index digests and the CVCs, read as `v`. */
const DIGEST_COLUMNS = columnsOf(TokenSearchIndexEntity);
const DIGEST_RECORD = recordsetOf(TokenSearchIndexEntity);
const CVC_COLUMNS = columnsOf(TokenCvcEntity);
const CVC_RECORD = recordsetOf(TokenCvcEntity);

/**
 * How an insert meets an id already taken, chosen by the caller; the whole change fails either way.
 * `{ named }`: with the error it makes for the first id taken (a transaction: the insert's answer comes
 * when the change's writes are sent, before anything commits). `{ refused }`: with that error, naming
 * none (a one-statement change, which has committed once it answers, and whose ids are generated: none
 * is ever taken).
 */
export type TakenIds = { named: (id: string) => Error } | { refused: () => Error };

/** Not expired at `now` (the parameter that holds it): an expired token is deleted for every purpose, purged or not. */
const live = (now: string) => `(expires_at IS NULL OR expires_at > ${now})`;

/** The lock key of one (tenant, type, fingerprint): its first 31 bits of SHA-256. */
const deduplicationKey = (tenantId: string, type: string, fingerprint: string): number =>
  createHash('sha256').update(`${tenantId}:${type}:${fingerprint}`).digest().readInt32BE(0);

const bytea = (value: Buffer) => `\\x${value.toString('hex')}`;

/**
 * Tokens, their search index digests and their CVCs, always within one tenant. Writes, locks and reads
 * that must see a change's own writes go through the change they are given; other reads through the pool.
 * Lists and searches are in `TokenSearchRepository`.
 */
@Injectable()
export class TokensRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A live token of the tenant with its sealed data (a read outside any change). */
  @GenerateSql({ params: [EXAMPLE_TENANT, EXAMPLE_TOKEN, EXAMPLE_NOW] })
  async findLive(tenantId: string, id: string, now: Date): Promise<SealedToken | undefined> {
    const [token] = await select(
      this.dataSource,
      SEALED,
      (columns) => `SELECT ${columns} FROM tokens WHERE tenant_id = $1 AND id = $2 AND ${live('$3')}`,
      [tenantId, id, now],
    );
    return token;
  }

  /** A live token of the tenant with its sealed data, locked `FOR UPDATE` until the change ends. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_TOKEN, EXAMPLE_NOW] })
  async lockLive(change: Change, tenantId: string, id: string, now: Date): Promise<SealedToken | undefined> {
    const [token] = await select(
      change,
      SEALED,
      (columns) => `SELECT ${columns} FROM tokens
        WHERE tenant_id = $1 AND id = $2 AND ${live('$3')} FOR UPDATE`,
      [tenantId, id, now],
    );
    return token;
  }

  /** The sealed data (and its data key's generation) of those of these tokens the tenant still has, by id. */
  @GenerateSql({ params: [EXAMPLE_TENANT, [EXAMPLE_TOKEN]] })
  async findSealedData(
    tenantId: string,
    ids: string[],
  ): Promise<Map<string, { data: Buffer; data_key: number }>> {
    if (!ids.length) return new Map();
    const tokens = await select(
      this.dataSource,
      rowsOf(TokenEntity, { only: ['id', 'data', 'data_key'] }),
      (columns) => `SELECT ${columns} FROM tokens WHERE tenant_id = $1 AND id = ANY($2::varchar[])`,
      [tenantId, ids],
    );
    return new Map(tokens.map((token) => [token.id, { data: token.data, data_key: token.data_key }]));
  }

  /**
   * Those of these tokens the tenant still has live, without their data, in no particular order; read
   * where the caller says: in its change, or through the pool (`UnitOfWork.reader`).
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, [EXAMPLE_TOKEN], EXAMPLE_NOW] })
  async findLiveByIds(db: Queryable, tenantId: string, ids: string[], now: Date): Promise<TokenRow[]> {
    if (!ids.length) return [];
    return select(
      db,
      WITHOUT_DATA,
      (columns) => `SELECT ${columns} FROM tokens
        WHERE tenant_id = $1 AND id = ANY($2::varchar[]) AND ${live('$3')}`,
      [tenantId, ids, now],
    );
  }

  /** The tenant's live tokens with one of these fingerprints, oldest first (under the deduplication lock). */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, ['fp1'], EXAMPLE_NOW] })
  async findLiveByFingerprints(
    change: Change,
    tenantId: string,
    fingerprints: string[],
    now: Date,
  ): Promise<TokenRow[]> {
    return select(
      change,
      WITHOUT_DATA,
      (columns) => `SELECT ${columns} FROM tokens
        WHERE tenant_id = $1 AND fingerprint = ANY($2::varchar[]) AND ${live('$3')}
        ORDER BY created_at ASC, id ASC`,
      [tenantId, fingerprints, now],
    );
  }

  /**
   * The tenant's live card tokens with one of these fingerprints (an import's duplicates): their ids,
   * fingerprints and creation times. One index probe per fingerprint (a lateral subquery the planner
   * cannot pull up), whatever the statistics say: a tenant's tokens grow by a million within minutes
   * during an import, long before ANALYZE sees them, and a plan made on the old counts scanned them all.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, ['fp1'], EXAMPLE_NOW] })
  async findLiveCards(
    change: Change,
    tenantId: string,
    fingerprints: string[],
    now: Date,
  ): Promise<Pick<TokenRow, 'id' | 'fingerprint' | 'created_at'>[]> {
    if (!fingerprints.length) return [];
    return select(
      change,
      rowsOf(TokenEntity, { only: ['id', 'fingerprint', 'created_at'], alias: 't' }),
      (columns) => `SELECT ${columns} FROM unnest($2::varchar[]) AS f(fingerprint)
        CROSS JOIN LATERAL (
          SELECT id, fingerprint, created_at, type, expires_at FROM tokens
           WHERE tenant_id = $1 AND fingerprint = f.fingerprint OFFSET 0) AS t
        WHERE t.type = 'card' AND (t.expires_at IS NULL OR t.expires_at > $3)`,
      [tenantId, [...new Set(fingerprints)], now],
    );
  }

  /**
   * A transaction-scoped advisory lock per (tenant, type, fingerprint), taken in
   * one order, so that concurrent identical deduplicating requests wait for each other and exactly one
   * of them creates the token.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, [{ type: 'card', fingerprint: 'fp1' }]] })
  async lockForDeduplication(
    change: Change,
    tenantId: string,
    keys: { type: string; fingerprint: string }[],
  ): Promise<void> {
    const lockKeys = [...new Set(keys.map((k) => deduplicationKey(tenantId, k.type, k.fingerprint)))];
    if (!lockKeys.length) return;
    await change.query(
      `SELECT count(pg_advisory_xact_lock(${LOCK_KEYS.deduplication}, k))
         FROM (SELECT k FROM unnest($1::int[]) AS k ORDER BY k) AS ordered`,
      [lockKeys],
    );
  }

  /**
   * The whole batch as one write: the tokens, then, for the tokens it inserted, their search index
   * digests and their CVCs, as data-modifying CTEs (one round trip instead of three; the foreign keys are
   * checked at the statement's end, when the tokens exist). Each table's rows travel as one JSON
   * parameter (`jsonb_to_recordset`), so the statement's text is the same for 1 card or 100: PostgreSQL
   * can keep it prepared, and there are 3 parameters to send, not 25 per card. An id already taken is
   * skipped (`ON CONFLICT DO NOTHING`, never an error); what follows is the caller's choice (`taken`):
   * the ids inserted are answered, or the change is refused. In a one-statement change it joins that
   * statement. Answers the ids inserted when `answered`, else undefined.
   */
  @GenerateSql(
    {
      name: 'named',
      change: true,
      params: [EXAMPLE_NEW_TOKENS, { named: () => new Error('taken') }],
      answers: [[{ r0: [EXAMPLE_TOKEN] }]],
    },
    { name: 'refused', change: true, params: [EXAMPLE_NEW_TOKENS, { refused: () => new Error('taken') }] },
  )
  async insert(change: Change, { tokens, digests, cvcs }: NewTokens, taken: TakenIds): Promise<void> {
    if ('named' in taken && change.mode === 'statement')
      throw new Error('a one-statement change has committed before it could name a taken id');
    if (!tokens.length) return;
    await change.write(
      ({ p, name, refuse }) => {
        const [t, s, c] = ['tokens', 'indexes', 'cvcs'].map(name);
        const rows = p.add(
          JSON.stringify(
            tokens.map((token) => ({
              ...token,
              data: bytea(token.data),
              fingerprint_groups: token.fingerprint_groups?.map(bytea) ?? null,
            })),
          ),
        );
        const ctes = [
          `${t} AS (INSERT INTO tokens (${TOKEN_COLUMNS})
              SELECT ${TOKEN_COLUMNS} FROM jsonb_to_recordset(${rows}::jsonb) AS r(${TOKEN_RECORD})
              ON CONFLICT DO NOTHING RETURNING tenant_id, id)`,
        ];
        if (digests.length) {
          const given = p.add(
            JSON.stringify(
              digests.map((d) => ({ token_id: d.tokenId, tenant_id: d.tenantId, digest: bytea(d.digest) })),
            ),
          );
          ctes.push(`${s} AS (INSERT INTO token_search_indexes (${DIGEST_COLUMNS})
            SELECT ${columnsOf(TokenSearchIndexEntity, 'v')}
              FROM jsonb_to_recordset(${given}::jsonb) AS v(${DIGEST_RECORD})
              JOIN ${t} ON ${t}.tenant_id = v.tenant_id AND ${t}.id = v.token_id
            ON CONFLICT DO NOTHING)`);
        }
        if (cvcs.length) {
          const given = p.add(
            JSON.stringify(
              cvcs.map((cvc) => ({
                token_id: cvc.tokenId,
                tenant_id: cvc.tenantId,
                cvc: bytea(cvc.cvc),
                data_key: cvc.dataKey,
                expires_at: cvc.expiresAt,
              })),
            ),
          );
          ctes.push(`${c} AS (INSERT INTO token_cvcs (${CVC_COLUMNS})
            SELECT ${columnsOf(TokenCvcEntity, 'v')}
              FROM jsonb_to_recordset(${given}::jsonb) AS v(${CVC_RECORD})
              JOIN ${t} ON ${t}.tenant_id = v.tenant_id AND ${t}.id = v.token_id)`);
        }
        const result =
          'named' in taken
            ? `(SELECT array_agg(id) FROM ${t})`
            : refuse(`(SELECT count(*) FROM ${t}) < ${p.add(tokens.length)}::int`);
        return { ctes, result };
      },
      'named' in taken
        ? {
            then: (ids) => {
              const inserted = new Set((ids as string[] | null) ?? []);
              const first = tokens.find((token) => !inserted.has(token.id));
              if (first) throw taken.named(first.id);
            },
          }
        : { refused: taken.refused },
    );
  }

  /**
   * Deletes the tenant's expired tokens that hold one of these ids, as the retention job would: an
   * expired token is deleted for every purpose, so its id is free for a new token at once. Through
   * `change.query`: the writes the change gathered before (the card enumeration guard's counts) go first.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, [EXAMPLE_TOKEN], EXAMPLE_NOW] })
  async purgeExpired(change: Change, tenantId: string, ids: string[], now: Date): Promise<void> {
    if (ids.length)
      await change.query(
        `DELETE FROM tokens WHERE tenant_id = $1 AND id = ANY($2::varchar[]) AND expires_at <= $3`,
        [tenantId, ids, now],
      );
  }

  /** Replaces a token's search index digests: its old ones deleted, the new ones in one INSERT. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_TOKEN, [Buffer.from('digest')]] })
  async replaceSearchIndexes(
    change: Change,
    tenantId: string,
    tokenId: string,
    digests: Buffer[],
  ): Promise<void> {
    await change.query('DELETE FROM token_search_indexes WHERE tenant_id = $1 AND token_id = $2', [
      tenantId,
      tokenId,
    ]);
    if (!digests.length) return;
    const { sql, params } = multiRowInsert(
      tableNameOf(TokenSearchIndexEntity),
      columnNamesOf(TokenSearchIndexEntity),
      digests.map((digest) => [tokenId, tenantId, digest]),
    );
    await change.query(`${sql} ON CONFLICT DO NOTHING`, params);
  }

  @GenerateSql({
    change: true,
    params: [
      EXAMPLE_TENANT,
      EXAMPLE_TOKEN,
      {
        metadata: { order: '42' },
        search_indexes: null,
        fingerprint_expression: '{{ data.number }}',
        fingerprint: 'fp1',
        fingerprint_groups: null,
        expires_at: null,
        modified_by: EXAMPLE_APPLICATION,
        modified_at: EXAMPLE_NOW,
      },
    ],
  })
  async update(change: Change, tenantId: string, id: string, changes: TokenChanges): Promise<void> {
    const p = new SqlParams();
    const where = `tenant_id = ${p.add(tenantId)} AND id = ${p.add(id)}`;
    const set = assignmentsOf(TokenEntity, p, {
      metadata: changes.metadata,
      searchIndexes: changes.search_indexes,
      fingerprintExpression: changes.fingerprint_expression,
      fingerprint: changes.fingerprint,
      fingerprintGroups: changes.fingerprint_groups,
      expiresAt: changes.expires_at,
      modifiedBy: changes.modified_by,
      modifiedAt: changes.modified_at,
    });
    await change.query(`UPDATE tokens SET ${set} WHERE ${where}`, p.values);
  }

  /** Deletes a token; its search indexes and CVC go with it (foreign keys `ON DELETE CASCADE`). */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_TOKEN] })
  async delete(change: Change, tenantId: string, id: string): Promise<void> {
    await change.query('DELETE FROM tokens WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  }

  /** The token's sealed CVC, if still retained (a read outside any change). */
  @GenerateSql({ params: [EXAMPLE_TENANT, EXAMPLE_TOKEN, EXAMPLE_NOW] })
  async findLiveCvc(
    tenantId: string,
    tokenId: string,
    now: Date,
  ): Promise<{ cvc: Buffer; dataKey: number } | undefined> {
    const [row] = await select(
      this.dataSource,
      rowsOf(TokenCvcEntity, { only: ['cvc', 'data_key'] }),
      (columns) =>
        `SELECT ${columns} FROM token_cvcs WHERE tenant_id = $1 AND token_id = $2 AND expires_at > $3`,
      [tenantId, tokenId, now],
    );
    return row && { cvc: row.cvc, dataKey: row.data_key };
  }

  /**
   * Deletes the token's CVC in the change that used it (orchestration's authorization outcome): a piece
   * of the change's write statement, sent with the transaction's own writes.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_TOKEN] })
  async deleteCvc(change: Change, tenantId: string, tokenId: string): Promise<void> {
    await change.write(({ p, name }) => ({
      ctes: [
        `${name('cvc_forgotten')} AS (DELETE FROM token_cvcs
          WHERE tenant_id = ${p.add(tenantId)}::uuid AND token_id = ${p.add(tokenId)}::varchar)`,
      ],
    }));
  }
}
