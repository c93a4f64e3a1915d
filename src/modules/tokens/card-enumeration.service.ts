import { Injectable } from '@nestjs/common';
import { AuditTrail } from '../../common/audit/audit-trail.service';
import type { Principal } from '../../common/auth/principal';
import type { TenantKeys } from '../../common/crypto/tenant-keys.service';
import { ProblemException } from '../../common/errors/problem.exception';
import { Metrics } from '../../common/metrics/metrics';
import { AppConfig } from '../../config/app-config';
import { countedNumber, countNumbers } from './card-enumeration';
import { CardEnumerationRepository } from './card-enumeration.repository';
import { decide } from './token-access';

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
 * token) are never counted. The counting state holds digests only (see `card-enumeration.ts`).
 */
@Injectable()
export class CardEnumerationGuard {
  constructor(
    private readonly counts: CardEnumerationRepository,
    private readonly audit: AuditTrail,
    private readonly metrics: Metrics,
    private readonly config: AppConfig,
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
  async refused(who: Principal): Promise<void> {
    this.metrics.cardEnumerationRefused();
    await this.audit.write(
      { tenantId: who.tenantId, applicationId: who.applicationId, sessionId: who.sessionId },
      [
        {
          entityType: 'token',
          entityId: null,
          operation: 'refuse',
          message: 'Tokenize refused: card enumeration suspected',
          tokenType: 'card',
        },
      ],
    );
  }

  /** Deletes the counting rows past the window; for the retention job. */
  prune(now: Date): Promise<number> {
    return this.counts.deleteCountedBefore(new Date(now.getTime() - CARD_ENUMERATION_WINDOW_MS));
  }
}
