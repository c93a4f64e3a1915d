import { Injectable } from '@nestjs/common';
import type { AuditEntry } from '../../../common/audit/audit.types';
import type { Principal } from '../../../common/auth/principal';
import { TenantKeys, TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import { ProblemException } from '../../../common/errors/problem.exception';
import { Clock } from '../../../common/jobs/clock';
import { Metrics } from '../../../common/metrics/metrics';
import { AppConfig } from '../../../config/app-config';
import { countedNumber, countNumbers, countReads, readIdentity } from './card-enumeration';
import { CardEnumerationRepository } from './card-enumeration.repository';
import { decide } from '../access/token-access';
import type { TokenRow } from '../tokens.repository';
import type { Change } from '../../../common/unit-of-work/change';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';

export const CARD_ENUMERATION_WINDOW_MS = 24 * 60 * 60 * 1000;
export const CARD_ENUMERATION_CODE = 'card_enumeration_suspected';

/** A `refuse` audit row with a fixed message: no number, no digits, no token named. */
const refusal = (message: string): AuditEntry => ({
  entityType: 'token',
  entityId: null,
  operation: 'refuse',
  message,
  tokenType: 'card',
});

/** The refusal: a 429 that names neither the numbers nor their digits. */
export class CardEnumerationRefused extends ProblemException {
  constructor(
    detail = 'Too many distinct card numbers sharing their first six and last four digits were tokenized in this ' +
      'tenant within 24 hours by keys that receive fingerprints; nothing was created. A bulk import that needs ' +
      'no fingerprints uses a key without token:read.',
  ) {
    super(429, detail, { code: CARD_ENUMERATION_CODE });
  }
}

/**
 * Another request counted numbers in a group after a one-statement tokenize read the counts (or took
 * its snapshot): nothing was written, and the tokenize tries again. Never answered.
 */
export class CardEnumerationConflict extends Error {
  constructor() {
    super('card enumeration counts changed between the read and the write');
  }
}

/**
 * The card enumeration guard. A fingerprint answered for each candidate number would tell which
 * candidate a masked card (BIN and last four) is, so the callers that learn fingerprints (they may read
 * the tokens they make, or search them by `fingerprint:`) may together tokenize at most
 * CARD_ENUMERATION_LIMIT distinct numbers of one group (same first 6 and last 4 digits) per tenant and
 * 24 hours. Callers that learn none (public keys, keys without token:read or token:search on the new
 * token) are never counted at tokenize; the tokens they make carry their pending groups, and the first
 * read that would show such a token's fingerprint counts it under the same limit (`showable`). The
 * counting state holds digests only (see `card-enumeration.ts`).
 */
@Injectable()
export class CardEnumerationGuard {
  constructor(
    private readonly counts: CardEnumerationRepository,
    private readonly work: UnitOfWork,
    private readonly metrics: Metrics,
    private readonly config: AppConfig,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
  ) {}

  /**
   * Whether a one-statement tokenize may count (its statement decides the limit in its own snapshot and
   * writes only where no other request counted in its groups since). Not on the embedded database: its
   * one connection serves every request in turn, so nothing runs between a transaction's statements
   * anyway, and the transaction that locks the groups first never has to be tried again.
   */
  get optimistic(): boolean {
    return !this.config.embedded;
  }

  /**
   * Counts `numbers` (those of tokens whose fingerprint the caller learns) in the caller's change, which
   * also holds the write. Refuses with `CardEnumerationRefused` (writing nothing) past the limit. With no
   * number to count it does nothing.
   *
   * In a one-statement change (the tokenize of generated ids), no lock is held between statements:
   * - several numbers: the statement that writes the tokens decides the limit in its own snapshot
   *   (`countInWrite`), one round trip, planned afresh each time;
   * - one number (a checkout): the counts are read through the pool first, then written with the tokens
   *   only where no other request counted in their groups meanwhile (`insertIfUnchanged`), two round
   *   trips, the write kept prepared. Planning the deciding statement for every request cost PostgreSQL
   *   more than the round trip it saves (docs/benchmarks.md, issue 44), and a kept plan of a statement
   *   that reads is not safe.
   * Either way, where another request counted in one of its groups meanwhile, the statement refuses
   * itself with `CardEnumerationConflict` and the caller tries again. In a transaction the groups are
   * locked first (their versions moved), then read and written: concurrent requests over a group wait
   * for each other.
   */
  async count(change: Change, who: Principal, keys: TenantKeys, numbers: string[], now: Date): Promise<void> {
    if (!numbers.length) return;
    const wanted = [...new Set(numbers)].map((n) => countedNumber(keys.fingerprint, n));
    const since = new Date(now.getTime() - CARD_ENUMERATION_WINDOW_MS);
    const countedBy = who.sessionId ?? who.applicationId;
    const limit = this.config.CARD_ENUMERATION_LIMIT;
    const locked = change.mode === 'transaction';
    if (!locked && wanted.length > 1)
      return this.counts.countInWrite(
        change,
        who,
        countedBy,
        wanted,
        { since, now, limit },
        { refused: () => new CardEnumerationRefused(), conflict: () => new CardEnumerationConflict() },
      );
    const groups = [...new Map(wanted.map((w) => [w.group.toString('hex'), w.group])).values()];
    if (locked) await this.counts.lockGroups(change, who.tenantId, groups, now);
    // What was counted, and the numbers stored in a token this caller may read: no news to it, they do
    // not count.
    const {
      counted: existing,
      stored,
      versions,
    } = await this.counts.findCountedAndStored(
      locked ? change : this.work.reader,
      who.tenantId,
      groups,
      since,
      countedBy,
      wanted.map((w) => w.fingerprint),
      now,
    );
    const readable = new Set(
      stored.filter((row) => decide(who, 'token:read', row).allowed).map((row) => row.fingerprint),
    );
    const rows = countNumbers(wanted, existing, countedBy, readable, limit);
    if (!rows) throw new CardEnumerationRefused();
    if (locked) return this.counts.insert(change, who.tenantId, rows, now);
    const read = new Map(versions.map((v) => [v.group.toString('hex'), v.version]));
    const written = [...new Map(rows.map((r) => [r.group.toString('hex'), r.group])).entries()].map(
      ([hex, group]) => ({ group, version: read.get(hex) ?? null }),
    );
    await this.counts.insertIfUnchanged(
      change,
      who.tenantId,
      written,
      rows,
      now,
      () => new CardEnumerationConflict(),
    );
  }

  /**
   * Records a refusal once the change it refused has rolled back: the metric, and one `refuse` audit row
   * (no number, no digits) in a change of its own, which answers no request (no idempotency record).
   */
  async refused(who: Principal, message = 'Tokenize refused: card enumeration suspected'): Promise<void> {
    this.metrics.cardEnumerationRefused();
    await this.work.statement({ actor: who }, async (change) => {
      change.audit(refusal(message));
    });
  }

  /**
   * Which of these tokens (all of them ones the caller may read) a read may show the fingerprint of. A
   * token whose fingerprint was counted (made by a counted caller, read before, or holding no card
   * number: `fingerprint_groups` null) costs nothing. The others, made by a caller the guard did not
   * count (a public key, an import key without token:read), are counted now, all in one transaction
   * under the groups' locks: shown while their groups stay within CARD_ENUMERATION_LIMIT, then marked
   * counted so no later read counts them again; past the limit withheld (the read still answers, without
   * the fingerprint), with one `refuse` audit row and the metric for the request.
   *
   * The counting happens in `change` when the caller gives its own (a write that answers a token, or
   * another module's change); otherwise in a change of its own, opened only when there is something to
   * count, which answers no request (a read's idempotency record, if any, is the interceptor's).
   */
  async showable(
    who: Principal,
    rows: Pick<TokenRow, 'id' | 'fingerprint' | 'fingerprint_groups'>[],
    change?: Change,
  ): Promise<Set<string>> {
    const shown = new Set(rows.filter((row) => !row.fingerprint_groups?.length).map((row) => row.id));
    const pending = rows.filter((row) => row.fingerprint_groups?.length);
    if (!pending.length) return shown;
    const keys = await this.tenantKeys.keysFor(who.tenantId);
    const now = this.clock.now();
    const count = async (change: Change): Promise<Set<string>> => {
      const groups = pending.flatMap((row) => row.fingerprint_groups!);
      await this.counts.lockGroups(change, who.tenantId, groups, now);
      const countedBy = who.sessionId ?? who.applicationId;
      const since = new Date(now.getTime() - CARD_ENUMERATION_WINDOW_MS);
      const existing = await this.counts.findCounted(change, who.tenantId, groups, since, countedBy);
      const decision = countReads(
        pending.map((row) => ({
          tokenId: row.id,
          groups: row.fingerprint_groups!,
          identity: readIdentity(keys.fingerprint, row.fingerprint),
        })),
        existing,
        countedBy,
        this.config.CARD_ENUMERATION_LIMIT,
      );
      await this.counts.insert(change, who.tenantId, decision.rows, now);
      await this.counts.markCounted(change, who.tenantId, [...decision.shown]);
      // Sent now (when nothing was marked, the counts are still gathered): the caller's change may go on
      // through its entity manager, which refuses while writes are pending.
      await change.flush();
      // A read that withheld fingerprints: one `refuse` audit row (no number, no token named) and the metric.
      if (decision.shown.size < pending.length) {
        change.audit(refusal('Fingerprint withheld from a read: card enumeration suspected'));
        change.afterCommit(() => this.metrics.cardEnumerationRefused());
      }
      return decision.shown;
    };
    const counted = change ? await count(change) : await this.work.transaction({ actor: who }, count);
    for (const id of counted) shown.add(id);
    return shown;
  }

  /** Deletes the counting rows past the window; for the retention job. */
  prune(change: Change, now: Date): Promise<number> {
    return this.counts.deleteCountedBefore(change, new Date(now.getTime() - CARD_ENUMERATION_WINDOW_MS));
  }
}
