import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change } from '../../common/unit-of-work/change';
import type { PieceBuilder } from '../../common/unit-of-work/write-batch';
import { GenerateSql } from '../../database/generate-sql';
import { type ColumnOf, columnsOf, type RowOf, affectedRows, queryRows } from '../../database/table';
import { IdempotencyRecordEntity } from './entities/idempotency-record.entity';

const EXAMPLE_KEY: RecordKey = {
  tenantId: '00000000-0000-4000-8000-000000000001',
  scope: 'application:00000000-0000-4000-8000-000000000002',
  keyDigest: Buffer.alloc(32, 7),
};
const EXAMPLE_CLAIM = '00000000-0000-4000-8000-000000000003';
const EXAMPLE_RESOURCE = '00000000-0000-4000-8000-000000000004';
const EXAMPLE_NOW = new Date('2026-01-01T00:00:00.000Z');
const EXAMPLE_RESPONSE: CompletedResponse = {
  status: 201,
  headers: { 'content-type': 'application/json; charset=utf-8' },
  sealedBody: Buffer.alloc(48, 9),
};

/** A record's primary key: tenant, caller (application or session) and the HMAC of the key. */
export interface RecordKey {
  tenantId: string;
  scope: string;
  keyDigest: Buffer;
}

export interface NewClaim extends RecordKey {
  requestDigest: Buffer;
  claimId: string;
  claimedUntil: Date;
  createdAt: Date;
  expiresAt: Date;
}

export interface IdempotencyRecord {
  requestDigest: Buffer;
  state: 'processing' | 'completed';
  responseStatus: number | null;
  responseHeaders: Record<string, string> | null;
  /** Sealed with the tenant's key; null for an empty body. */
  responseBody: Buffer | null;
}

export interface CompletedResponse {
  status: number;
  headers: Record<string, string>;
  sealedBody: Buffer | null;
}

/** What `find` reads of a record. */
const FOUND = [
  'request_digest',
  'state',
  'response_status',
  'response_headers',
  'response_body',
] as const satisfies ColumnOf<IdempotencyRecordEntity>[];

type RecordRow = Pick<RowOf<IdempotencyRecordEntity>, (typeof FOUND)[number]>;

/** The columns a claim writes, in the order of its VALUES. */
const CLAIMED = [
  'tenant_id',
  'scope',
  'key_digest',
  'request_digest',
  'claim_id',
  'state',
  'claimed_until',
  'created_at',
  'expires_at',
] as const satisfies ColumnOf<IdempotencyRecordEntity>[];

const PK = 'tenant_id = $1 AND scope = $2 AND key_digest = $3';
/** In a takeover: the record is a stale claim with a pinned resource, within its lifetime. */
const RESUMING = 'r.resource_id IS NOT NULL AND r.expires_at > EXCLUDED.created_at';

/**
 * The `idempotency_records` table. Claims, reads and releases are statements of their own (`dataSource`),
 * committed at once whatever change is open, so that other requests see a claim as soon as it is taken;
 * completing and pinning a resource run in the change they are given (`completeIn`, `pinIn`), so the
 * change and its record (or its pin) commit together. `complete` stores the response of a handler that
 * committed its own changes, after it.
 */
@Injectable()
export class IdempotencyRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Inserts a claim, or takes over a record past its lifetime or a claim past its timeout (one atomic
   * `INSERT ... ON CONFLICT`); returns the claim id now on the record (another request's when it holds it).
   * A stale claim that pinned a resource is a request interrupted after it created something: the retry
   * keeps the pin (and the record's lifetime) and is told the resource; the same key with another
   * request cannot take it over. A record past its lifetime starts afresh.
   */
  @GenerateSql({
    params: [
      {
        ...EXAMPLE_KEY,
        requestDigest: Buffer.alloc(32, 8),
        claimId: EXAMPLE_CLAIM,
        claimedUntil: new Date('2026-01-01T00:01:00.000Z'),
        createdAt: EXAMPLE_NOW,
        expiresAt: new Date('2026-01-02T00:00:00.000Z'),
      },
    ],
  })
  async claim(claim: NewClaim): Promise<{ claimId: string; resourceId: string | null } | undefined> {
    const claimed: Pick<RowOf<IdempotencyRecordEntity>, 'claim_id' | 'resource_id'>[] =
      await this.dataSource.query(
        `INSERT INTO idempotency_records AS r
              (${CLAIMED.join(', ')})
       VALUES ($1, $2, $3, $4, $5, 'processing', $6, $7, $8)
       ON CONFLICT (tenant_id, scope, key_digest) DO UPDATE
          SET request_digest = EXCLUDED.request_digest, claim_id = EXCLUDED.claim_id, state = 'processing',
              claimed_until = EXCLUDED.claimed_until, response_status = NULL, response_headers = NULL,
              response_body = NULL,
              resource_id = CASE WHEN ${RESUMING} THEN r.resource_id END,
              created_at = CASE WHEN ${RESUMING} THEN r.created_at ELSE EXCLUDED.created_at END,
              expires_at = CASE WHEN ${RESUMING} THEN r.expires_at ELSE EXCLUDED.expires_at END
        WHERE r.expires_at <= EXCLUDED.created_at
           OR (r.state = 'processing' AND r.claimed_until <= EXCLUDED.created_at
               AND (r.resource_id IS NULL OR r.request_digest = EXCLUDED.request_digest))
       RETURNING claim_id, resource_id`,
        [
          claim.tenantId,
          claim.scope,
          claim.keyDigest,
          claim.requestDigest,
          claim.claimId,
          claim.claimedUntil,
          claim.createdAt,
          claim.expiresAt,
        ],
      );
    const row = claimed[0];
    return row && { claimId: row.claim_id, resourceId: row.resource_id };
  }

  @GenerateSql({ params: [EXAMPLE_KEY] })
  async find(key: RecordKey): Promise<IdempotencyRecord | undefined> {
    const rows = await queryRows<RecordRow>(
      this.dataSource,
      `SELECT ${columnsOf(IdempotencyRecordEntity, undefined, { only: FOUND })}
         FROM idempotency_records WHERE ${PK}`,
      [key.tenantId, key.scope, key.keyDigest],
    );
    const row = rows[0];
    return (
      row && {
        requestDigest: row.request_digest,
        state: row.state,
        responseStatus: row.response_status,
        responseHeaders: row.response_headers,
        responseBody: row.response_body,
      }
    );
  }

  /**
   * Stores the response on the record while `claimId` still holds it, a statement of its own (after a
   * handler that committed its own changes); false when it no longer does.
   */
  @GenerateSql({ params: [EXAMPLE_KEY, EXAMPLE_CLAIM, EXAMPLE_RESPONSE] })
  async complete(key: RecordKey, claimId: string, response: CompletedResponse): Promise<boolean> {
    const count = await affectedRows(
      this.dataSource,
      `UPDATE idempotency_records
          SET state = 'completed', response_status = $5, response_headers = $6, response_body = $7
        WHERE ${PK} AND claim_id = $4`,
      [
        key.tenantId,
        key.scope,
        key.keyDigest,
        claimId,
        response.status,
        JSON.stringify(response.headers),
        response.sealedBody,
      ],
    );
    return count === 1;
  }

  /**
   * Stores the response on the record with the change it answers: in the change's transaction, or in its
   * one statement. Where `claimId` no longer holds the record (a retry took it over),
   * the change fails with the error `takenOver` makes, and nothing of it is written.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_KEY, EXAMPLE_CLAIM, EXAMPLE_RESPONSE, () => new Error()] })
  async completeWithChange(
    change: Change,
    key: RecordKey,
    claimId: string,
    response: CompletedResponse,
    takenOver: () => Error,
  ): Promise<void> {
    await change.write(completePiece(key, claimId, response), { refused: takenOver });
  }

  /**
   * Pins the resource the request made on its claim, in the change that inserts it; false when `claimId` no longer holds the record.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_KEY, EXAMPLE_CLAIM, EXAMPLE_RESOURCE] })
  async pin(change: Change, key: RecordKey, claimId: string, resourceId: string): Promise<boolean> {
    const count = await affectedRows(
      change,
      `UPDATE idempotency_records SET resource_id = $5 WHERE ${PK} AND claim_id = $4 AND state = 'processing'`,
      [key.tenantId, key.scope, key.keyDigest, claimId, resourceId],
    );
    return count === 1;
  }

  /**
   * Gives the key back while `claimId` still holds it: the record is deleted, unless it pinned a
   * resource (that exists whatever the outcome): then the claim only ends, and the next request with
   * the key takes it over at once and answers the resource. A record already completed is kept: its
   * write committed with it although the request failed after (an answer lost with its connection), so
   * a retry replays that outcome instead of writing again.
   */
  @GenerateSql({ params: [EXAMPLE_KEY, EXAMPLE_CLAIM, EXAMPLE_NOW] })
  async release(key: RecordKey, claimId: string, now: Date): Promise<void> {
    await this.dataSource.query(
      `WITH released AS (
         DELETE FROM idempotency_records
          WHERE ${PK} AND claim_id = $4 AND resource_id IS NULL AND state = 'processing')
       UPDATE idempotency_records SET claimed_until = $5
        WHERE ${PK} AND claim_id = $4 AND resource_id IS NOT NULL AND state = 'processing'`,
      [key.tenantId, key.scope, key.keyDigest, claimId, now],
    );
  }

  /** Deletes the records of every tenant past their lifetime at `now`: one set-based statement. */
  @GenerateSql({ change: true, params: [EXAMPLE_NOW] })
  async deleteExpired(change: Change, now: Date): Promise<number> {
    const count = await affectedRows(change, 'DELETE FROM idempotency_records WHERE expires_at <= $1', [now]);
    return count;
  }
}

/** Completes the record while `claimId` holds it; refuses the whole change where it no longer does. */
const completePiece =
  (key: RecordKey, claimId: string, response: CompletedResponse): PieceBuilder =>
  ({ p, name, refuse }) => {
    const completed = name('idempotency');
    return {
      ctes: [
        `${completed} AS (
           UPDATE idempotency_records
              SET state = 'completed', response_status = ${p.add(response.status)}::int,
                  response_headers = ${p.add(JSON.stringify(response.headers))}::jsonb,
                  response_body = ${p.add(response.sealedBody)}::bytea
            WHERE tenant_id = ${p.add(key.tenantId)}::uuid AND scope = ${p.add(key.scope)}::text
              AND key_digest = ${p.add(key.keyDigest)}::bytea AND claim_id = ${p.add(claimId)}::uuid
           RETURNING 1)`,
      ],
      result: refuse(`NOT EXISTS (SELECT 1 FROM ${completed})`),
    };
  };
