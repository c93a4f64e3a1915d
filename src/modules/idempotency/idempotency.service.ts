import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { randomUUID } from 'node:crypto';
import { configure } from 'safe-stable-stringify';
import { DataSource } from 'typeorm';
import type { Principal } from '../../common/auth/principal';
import { open, seal } from '../../common/crypto/aead';
import { hmac, TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { Clock } from '../../common/jobs/clock';
import { ExclusiveJobRunner, Tick } from '../../common/jobs/exclusive';
import { LOCK_KEYS } from '../../database/data-source';

/** A claim left by a process that died is taken over after this long. */
export const CLAIM_TIMEOUT_MS = 60_000;
/** Records are replayed for this long, then ignored and deleted. */
export const RECORD_LIFETIME_MS = 24 * 60 * 60_000;

const canonicalJson = configure({ deterministic: true, circularValue: Error, bigint: false });

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Who a key belongs to and the HMACs that stand for the key and for the request. */
export interface IdempotencyScope {
  tenantId: string;
  scope: string;
  keyDigest: Buffer;
  requestDigest: Buffer;
  sealKey: Buffer;
}

export type ClaimOutcome =
  | { kind: 'claimed'; claimId: string }
  | { kind: 'in-flight' }
  | { kind: 'mismatch' }
  | { kind: 'replay'; response: StoredResponse };

interface RecordRow {
  request_digest: Buffer;
  state: 'processing' | 'completed';
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_body: Buffer | null;
}

const PK = 'tenant_id = $1 AND scope = $2 AND key_digest = $3';

/**
 * Storage of idempotency records (contract section 8). A key is claimed with one atomic
 * `INSERT ... ON CONFLICT` on the (tenant, caller, key) primary key, so the rules hold across instances;
 * a claim past its timeout, or a record past its lifetime, is taken over by the same statement.
 */
@Injectable()
export class IdempotencyService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly jobs: ExclusiveJobRunner,
  ) {}

  /** The scope of a key: tenant and calling application or session; the request as an HMAC of its canonical form. */
  async scopeFor(
    who: Principal,
    key: string,
    request: { method: string; path: string; body: unknown },
  ): Promise<IdempotencyScope> {
    const keys = await this.tenantKeys.keysFor(who.tenantId);
    const canonical = `${request.method}\n${request.path}\n${canonicalJson(request.body ?? null)}`;
    return {
      tenantId: who.tenantId,
      scope: who.sessionId ? `session:${who.sessionId}` : `application:${who.applicationId}`,
      keyDigest: hmac(keys.idempotency, `key\n${key}`),
      requestDigest: hmac(keys.idempotency, `request\n${canonical}`),
      sealKey: keys.encryption,
    };
  }

  async claim(s: IdempotencyScope): Promise<ClaimOutcome> {
    // A record can vanish between the failed claim and the read (its request failed and released it):
    // then claiming again is the right answer, so try a few times.
    for (let attempt = 0; attempt < 5; attempt++) {
      const claimId = randomUUID();
      const now = this.clock.now();
      const claimed: { claim_id: string }[] = await this.dataSource.query(
        `INSERT INTO idempotency_records AS r
                (tenant_id, scope, key_digest, request_digest, claim_id, state, claimed_until, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, 'processing', $6, $7, $8)
         ON CONFLICT (tenant_id, scope, key_digest) DO UPDATE
            SET request_digest = EXCLUDED.request_digest, claim_id = EXCLUDED.claim_id, state = 'processing',
                claimed_until = EXCLUDED.claimed_until, response_status = NULL, response_headers = NULL,
                response_body = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
          WHERE r.expires_at <= EXCLUDED.created_at
             OR (r.state = 'processing' AND r.claimed_until <= EXCLUDED.created_at)
         RETURNING claim_id`,
        [
          s.tenantId,
          s.scope,
          s.keyDigest,
          s.requestDigest,
          claimId,
          new Date(now.getTime() + CLAIM_TIMEOUT_MS),
          now,
          new Date(now.getTime() + RECORD_LIFETIME_MS),
        ],
      );
      if (claimed[0]?.claim_id === claimId) return { kind: 'claimed', claimId };
      const rows: RecordRow[] = await this.dataSource.query(
        `SELECT request_digest, state, response_status, response_headers, response_body
           FROM idempotency_records WHERE ${PK}`,
        [s.tenantId, s.scope, s.keyDigest],
      );
      const row = rows[0];
      if (!row) continue;
      if (!row.request_digest.equals(s.requestDigest)) return { kind: 'mismatch' };
      if (row.state === 'processing') return { kind: 'in-flight' };
      return {
        kind: 'replay',
        response: {
          status: row.response_status!,
          headers: row.response_headers ?? {},
          body: row.response_body ? open(s.sealKey, row.response_body, this.aad(s)) : Buffer.alloc(0),
        },
      };
    }
    return { kind: 'in-flight' };
  }

  /**
   * Stores the 2xx response, in the operation's transaction when there is one, so that the change and
   * its record commit together. False when the claim was taken over meanwhile (it outlived its timeout).
   */
  async complete(s: IdempotencyScope, claimId: string, response: StoredResponse): Promise<boolean> {
    const [, count]: [unknown, number] = await this.db.tx.query(
      `UPDATE idempotency_records
          SET state = 'completed', response_status = $5, response_headers = $6, response_body = $7
        WHERE ${PK} AND claim_id = $4`,
      [
        s.tenantId,
        s.scope,
        s.keyDigest,
        claimId,
        response.status,
        JSON.stringify(response.headers),
        response.body.length ? seal(s.sealKey, response.body, this.aad(s)) : null,
      ],
    );
    return count === 1;
  }

  /** A failed request gives its key back: the next request with it is processed as new. */
  async release(s: IdempotencyScope, claimId: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM idempotency_records WHERE ${PK} AND claim_id = $4`, [
      s.tenantId,
      s.scope,
      s.keyDigest,
      claimId,
    ]);
  }

  /** Deletes records past their lifetime; one set-based statement, once per tick across instances. */
  @Cron(CronExpression.EVERY_10_MINUTES)
  scheduledPurgeExpired(): Promise<number | undefined> {
    return this.purgeExpired({ tickMs: 600000 });
  }

  purgeExpired(tick?: Tick): Promise<number | undefined> {
    return this.jobs.run(
      'idempotency-records',
      LOCK_KEYS.jobIdempotencyRecords,
      async () => {
        const [, count]: [unknown, number] = await this.db.tx.query(
          'DELETE FROM idempotency_records WHERE expires_at <= $1',
          [this.clock.now()],
        );
        return count;
      },
      tick,
    );
  }

  private aad(s: IdempotencyScope): string {
    return `${s.tenantId}:${s.scope}:${s.keyDigest.toString('base64')}:idempotency`;
  }
}
