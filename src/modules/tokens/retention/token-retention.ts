import { Injectable, OnModuleInit } from '@nestjs/common';
import { RetentionJob } from '../../../common/jobs/retention.job';
import { LOCK_KEYS } from '../../../database/data-source';
import { CardEnumerationGuard } from '../enumeration/card-enumeration.service';
import { TokenRetentionRepository } from './token-retention.repository';

/**
 * The vault's retention policies, run by RetentionJob every minute: expired tokens, and CVCs, which are
 * kept one hour at most (they are also deleted on first use in an authorization), and the card
 * enumeration guard's counting rows, kept 24 hours.
 *
 * Purging an expired token records no `token:deleted` event (Basis Theory names none for expiry and
 * sends none): the token ended at its `expires_at`, which its `token:created` or
 * `token:updated` event already carried, and the purge stays one set-based statement whatever it deletes.
 * `token:deleted` reports a DELETE /tokens/{id}.
 */
@Injectable()
export class TokenRetention implements OnModuleInit {
  constructor(
    private readonly retention: RetentionJob,
    private readonly expired: TokenRetentionRepository,
    private readonly enumeration: CardEnumerationGuard,
  ) {}

  onModuleInit(): void {
    this.retention.register({
      name: 'expired-tokens',
      lockKey: LOCK_KEYS.jobExpiredTokens,
      periodMs: 60_000,
      purge: (change, now) => this.expired.deleteExpiredTokens(change, now),
    });
    this.retention.register({
      name: 'cvc-retention',
      lockKey: LOCK_KEYS.jobCvcRetention,
      periodMs: 60_000,
      purge: (change, now) => this.expired.deleteExpiredCvcs(change, now),
    });
    this.retention.register({
      name: 'card-enumeration-counts',
      lockKey: LOCK_KEYS.jobCardEnumeration,
      periodMs: 60_000,
      purge: (change, now) => this.enumeration.prune(change, now),
    });
  }
}
