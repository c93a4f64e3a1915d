import { Injectable, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { configure } from 'safe-stable-stringify';
import type { Principal } from '../../common/auth/principal';
import type { Change } from '../../common/unit-of-work/change';
import { open, seal } from '../../common/crypto/aead';
import { hmac, TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { Clock } from '../../common/jobs/clock';
import { RetentionJob } from '../../common/jobs/retention.job';
import { LOCK_KEYS } from '../../database/data-source';
import { IdempotencyRepository } from './idempotency.repository';

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
  /** `resumed`: the resource the stale claim this one took over had pinned (its request died). */
  | { kind: 'claimed'; claimId: string; resumed?: string }
  | { kind: 'in-flight' }
  | { kind: 'mismatch' }
  | { kind: 'replay'; response: StoredResponse };

/**
 * Storage of idempotency records. A key is claimed with one atomic
 * `INSERT ... ON CONFLICT` on the (tenant, caller, key) primary key, so the rules hold across instances;
 * a claim past its timeout, or a record past its lifetime, is taken over by the same statement.
 */
@Injectable()
export class IdempotencyService implements OnModuleInit {
  constructor(
    private readonly records: IdempotencyRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly retention: RetentionJob,
  ) {}

  /** Records past their lifetime are deleted every 10 minutes (one set-based statement). */
  onModuleInit(): void {
    this.retention.register({
      name: 'idempotency-records',
      lockKey: LOCK_KEYS.jobIdempotencyRecords,
      periodMs: 600_000,
      purge: (change, now) => this.records.deleteExpired(change, now),
    });
  }

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
      const holder = await this.records.claim({
        tenantId: s.tenantId,
        scope: s.scope,
        keyDigest: s.keyDigest,
        requestDigest: s.requestDigest,
        claimId,
        claimedUntil: new Date(now.getTime() + CLAIM_TIMEOUT_MS),
        createdAt: now,
        expiresAt: new Date(now.getTime() + RECORD_LIFETIME_MS),
      });
      if (holder?.claimId === claimId)
        return holder.resourceId
          ? { kind: 'claimed', claimId, resumed: holder.resourceId }
          : { kind: 'claimed', claimId };
      const row = await this.records.find(s);
      if (!row) continue;
      if (!row.requestDigest.equals(s.requestDigest)) return { kind: 'mismatch' };
      if (row.state === 'processing') return { kind: 'in-flight' };
      return {
        kind: 'replay',
        response: {
          status: row.responseStatus!,
          headers: row.responseHeaders ?? {},
          body: row.responseBody ? open(s.sealKey, row.responseBody, this.aad(s)) : Buffer.alloc(0),
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
    return this.records.complete(s, claimId, {
      status: response.status,
      headers: response.headers,
      sealedBody: response.body.length ? seal(s.sealKey, response.body, this.aad(s)) : null,
    });
  }

  /**
   * Stores the response with the change it answers (its transaction or its one statement); the change
   * fails with `takenOver()` where a retry took the claim over meanwhile.
   */
  async completeWithChange(
    change: Change,
    s: IdempotencyScope,
    claimId: string,
    response: StoredResponse,
    takenOver: () => Error,
  ): Promise<void> {
    await this.records.completeWithChange(
      change,
      s,
      claimId,
      {
        status: response.status,
        headers: response.headers,
        sealedBody: response.body.length ? seal(s.sealKey, response.body, this.aad(s)) : null,
      },
      takenOver,
    );
  }

  /** Pins the resource a change creates on the claim, in that change; false once a retry took it over. */
  pin(change: Change, s: IdempotencyScope, claimId: string, resourceId: string): Promise<boolean> {
    return this.records.pin(change, s, claimId, resourceId);
  }

  /**
   * A failed request gives its key back: the next request with it is processed as new. One that had
   * pinned a resource keeps it: the next request answers that resource rather than make another.
   */
  async release(s: IdempotencyScope, claimId: string): Promise<void> {
    await this.records.release(s, claimId, this.clock.now());
  }

  private aad(s: IdempotencyScope): string {
    return `${s.tenantId}:${s.scope}:${s.keyDigest.toString('base64')}:idempotency`;
  }
}
