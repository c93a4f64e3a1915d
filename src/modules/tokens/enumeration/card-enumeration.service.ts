import { Injectable } from '@nestjs/common';
import { AuditTrail } from '../../../common/audit/audit-trail.service';
import type { Principal } from '../../../common/auth/principal';
import { inTransaction } from '../../../common/context/transactional';
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

export const CARD_ENUMERATION_WINDOW_MS = 24 * 60 * 60 * 1000;
export const CARD_ENUMERATION_CODE = 'card_enumeration_suspected';

/** The refusal: a 429 that names neither the numbers nor their digits. */
export class CardEnumerationRefused extends ProblemException {
  constructor() {
    super(
      429,
      'Too many distinct card numbers sharing their first six and last four digits were tokenized in this tenant ' +
        'within 24 hours by keys that receive fingerprints; nothing was created. A bulk import that needs no ' +
        'fingerprints uses a key without token:read.',
      { code: CARD_ENUMERATION_CODE },
    );
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
    private readonly audit: AuditTrail,
    private readonly metrics: Metrics,
    private readonly config: AppConfig,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
  ) {}

  /**
   * Counts `numbers` (those of tokens whose fingerprint the caller learns), in the caller's
   * transaction, which must also hold the write: the groups stay locked until it commits, so concurrent
   * requests never pass the limit together. Throws `CardEnumerationRefused` (writing nothing) past it.
   */
  async count(who: Principal, keys: TenantKeys, numbers: string[], now: Date): Promise<void> {
    if (!numbers.length) return;
    const wanted = [...new Set(numbers)].map((n) => countedNumber(keys.fingerprint, n));
    const groups = [...new Map(wanted.map((w) => [w.group.toString('hex'), w.group])).values()];
    await this.counts.lockGroups(who.tenantId, groups);
    const since = new Date(now.getTime() - CARD_ENUMERATION_WINDOW_MS);
    const countedBy = who.sessionId ?? who.applicationId;
    const existing = await this.counts.findCounted(who.tenantId, groups, since, countedBy);
    // Numbers stored in a token this caller may read are no news to it: they do not count.
    const stored = await this.counts.findStored(
      who.tenantId,
      wanted.map((w) => w.fingerprint),
      now,
    );
    const readable = new Set(
      stored.filter((row) => decide(who, 'token:read', row).allowed).map((row) => row.fingerprint),
    );
    const rows = countNumbers(wanted, existing, countedBy, readable, this.config.CARD_ENUMERATION_LIMIT);
    if (!rows) throw new CardEnumerationRefused();
    await this.counts.insert(who.tenantId, rows, now);
  }

  /**
   * Records a refusal once its transaction has rolled back: one `refuse` audit row (no number, no
   * digits) and the metric.
   */
  refused(who: Principal): Promise<void> {
    return this.recordRefusal(who, 'Tokenize refused: card enumeration suspected');
  }

  /**
   * Which of these tokens (all of them ones the caller may read) a read may show the fingerprint of. A
   * token whose fingerprint was counted (made by a counted caller, read before, or holding no card
   * number: `fingerprint_groups` null) costs nothing. The others, made by a caller the guard did not
   * count (a public key, an import key without token:read), are counted now, all in one transaction
   * under the groups' locks: shown while their groups stay within CARD_ENUMERATION_LIMIT, then marked
   * counted so no later read counts them again; past the limit withheld (the read still answers, without
   * the fingerprint), with one `refuse` audit row and the metric for the request.
   */
  async showable(
    who: Principal,
    rows: Pick<TokenRow, 'id' | 'fingerprint' | 'fingerprint_groups'>[],
  ): Promise<Set<string>> {
    const shown = new Set(rows.filter((row) => !row.fingerprint_groups?.length).map((row) => row.id));
    const pending = rows.filter((row) => row.fingerprint_groups?.length);
    if (!pending.length) return shown;
    const keys = await this.tenantKeys.keysFor(who.tenantId);
    const now = this.clock.now();
    const counted = await inTransaction(async () => {
      const groups = pending.flatMap((row) => row.fingerprint_groups!);
      await this.counts.lockGroups(who.tenantId, groups);
      const countedBy = who.sessionId ?? who.applicationId;
      const since = new Date(now.getTime() - CARD_ENUMERATION_WINDOW_MS);
      const existing = await this.counts.findCounted(who.tenantId, groups, since, countedBy);
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
      await this.counts.insert(who.tenantId, decision.rows, now);
      await this.counts.markCounted(who.tenantId, [...decision.shown]);
      return decision.shown;
    });
    if (counted.size < pending.length) await this.withheld(who);
    for (const id of counted) shown.add(id);
    return shown;
  }

  /** A read that withheld fingerprints: one `refuse` audit row (no number, no token named) and the metric. */
  private withheld(who: Principal): Promise<void> {
    return this.recordRefusal(who, 'Fingerprint withheld from a read: card enumeration suspected');
  }

  /** One `refuse` audit row with a fixed message (no number, no token named) and the metric. */
  private async recordRefusal(who: Principal, message: string): Promise<void> {
    this.metrics.cardEnumerationRefused();
    await this.audit.write(
      { tenantId: who.tenantId, applicationId: who.applicationId, sessionId: who.sessionId },
      [{ entityType: 'token', entityId: null, operation: 'refuse', message, tokenType: 'card' }],
    );
  }

  /** Deletes the counting rows past the window; for the retention job. */
  prune(change: Change, now: Date): Promise<number> {
    return this.counts.deleteCountedBefore(change, new Date(now.getTime() - CARD_ENUMERATION_WINDOW_MS));
  }
}
