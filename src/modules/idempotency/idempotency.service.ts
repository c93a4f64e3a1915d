import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { configure } from 'safe-stable-stringify';
import type { Principal } from '../../common/auth/principal';
import type { Change } from '../../common/unit-of-work/change';
import { open, seal } from '../../common/crypto/aead';
import { hmac, TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { databaseUnavailable } from '../../common/errors/problem-details';
import { Clock } from '../../common/jobs/clock';
import { RetentionJob } from '../../common/jobs/retention.job';
import { LOCK_KEYS } from '../../database/data-source';
import { IdempotencyRepository } from './idempotency.repository';

/** A claim left by a process that died is taken over after this long. */
export const CLAIM_TIMEOUT_MS = 60_000;
/** How often a release the database could not take (it was unreachable) is tried again. */
export const RELEASE_RETRY_MS = 1_000;
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
export class IdempotencyService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('IdempotencyService');
  /**
   * Releases and completions the database could not take, by claim id: tried again until they land or the
   * claim times out. A completion carries the response it stores.
   */
  private readonly pendingReleases = new Map<
    string,
    { scope: IdempotencyScope; until: number; response?: StoredResponse }
  >();
  private retrying: NodeJS.Timeout | undefined;
  private releasing = false;

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
      const holder = await this.claimOrRelease(s, claimId, {
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
   * The claim's statement; when the database went away under it, its answer is lost but it may have
   * committed (a claim no request holds, answered 409 until its timeout): its release is kept for when the
   * database is back. Releasing a claim id that never committed changes nothing.
   */
  private async claimOrRelease(
    s: IdempotencyScope,
    claimId: string,
    claim: Parameters<IdempotencyRepository['claim']>[0],
  ): ReturnType<IdempotencyRepository['claim']> {
    try {
      return await this.records.claim(claim);
    } catch (error) {
      if (databaseUnavailable(error)) this.settleLater(s, claimId);
      throw error;
    }
  }

  /**
   * Stores the 2xx response, in the operation's transaction when there is one, so that the change and
   * its record commit together. False when the claim was taken over meanwhile (it outlived its timeout).
   */
  async complete(s: IdempotencyScope, claimId: string, response: StoredResponse): Promise<boolean> {
    try {
      return await this.storeResponse(s, claimId, response);
    } catch (error) {
      // The handler's changes committed; the record's answer was lost with the database (a failover).
      // Left alone, the claim would answer 409 until its timeout: the response is stored once the
      // database is back instead, and the retry replays it.
      if (databaseUnavailable(error)) this.settleLater(s, claimId, response);
      throw error;
    }
  }

  private storeResponse(s: IdempotencyScope, claimId: string, response: StoredResponse): Promise<boolean> {
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
    try {
      await this.records.release(s, claimId, this.clock.now());
    } catch (error) {
      if (!databaseUnavailable(error)) throw error;
      this.settleLater(s, claimId);
    }
  }

  /**
   * The request failed because the database went away (a restart, a failover): so did its release. Left
   * alone, its key would answer 409 until the claim times out; the release is tried again every second
   * instead, so a retry is served as soon as the database is back (a crash leaves the timeout). With a
   * `response`, the claim is completed with it rather than released.
   */
  private settleLater(s: IdempotencyScope, claimId: string, response?: StoredResponse): void {
    this.pendingReleases.set(claimId, {
      scope: s,
      until: this.clock.now().getTime() + CLAIM_TIMEOUT_MS,
      response,
    });
    this.retrying ??= setInterval(() => void this.retryReleases(), RELEASE_RETRY_MS).unref();
  }

  /** One round of the releases still pending; the timer stops when none is left. */
  async retryReleases(): Promise<void> {
    if (this.releasing) return;
    this.releasing = true;
    try {
      await this.releaseRound();
    } finally {
      this.releasing = false;
    }
  }

  private async releaseRound(): Promise<void> {
    const now = this.clock.now();
    for (const [claimId, pending] of [...this.pendingReleases]) {
      // Past its timeout, the claim is anyone's to take over: nothing left to release.
      if (pending.until <= now.getTime()) {
        this.pendingReleases.delete(claimId);
        continue;
      }
      try {
        if (pending.response) await this.storeResponse(pending.scope, claimId, pending.response);
        else await this.records.release(pending.scope, claimId, now);
        this.pendingReleases.delete(claimId);
      } catch (error) {
        if (!databaseUnavailable(error)) {
          this.pendingReleases.delete(claimId);
          this.logger.error({ err: error }, 'could not release an idempotency claim');
        } else break;
      }
    }
    if (this.pendingReleases.size === 0) this.stopRetrying();
  }

  /** Claims whose release is still to be retried (for tests and shutdown). */
  get releasesPending(): number {
    return this.pendingReleases.size;
  }

  onApplicationShutdown(): void {
    this.stopRetrying();
  }

  private stopRetrying(): void {
    clearInterval(this.retrying);
    this.retrying = undefined;
  }

  private aad(s: IdempotencyScope): string {
    return `${s.tenantId}:${s.scope}:${s.keyDigest.toString('base64')}:idempotency`;
  }
}
