import { Injectable } from '@nestjs/common';
import type { Change } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
import { columnsOf, type RowOf, queryRows, affectedRows } from '../../../database/table';
import { WebhookDeliveryEntity } from '../entities/webhook-delivery.entity';
import type { WebhookEventEntity } from '../entities/webhook-event.entity';
import type { WebhookEntity } from '../entities/webhook.entity';

/** A webhook is disabled when this many of its deliveries in a row ended `failed`. */
export const DISABLE_AFTER_FAILURES = 100;

/** A delivery a worker holds under lease: what it needs to send it, and how many attempts it has had. */
export type ClaimedDelivery = Pick<RowOf<WebhookDeliveryEntity>, (typeof CLAIMED)[number]> & {
  event_data: RowOf<WebhookEventEntity>['data'];
  event_created_at: RowOf<WebhookEventEntity>['created_at'];
} & Pick<RowOf<WebhookEntity>, 'url' | 'secret'>;

/** What a claim answers of the delivery itself (`attempts` counts this attempt). */
const CLAIMED = ['tenant_id', 'id', 'webhook_id', 'event_id', 'event_type', 'attempts'] as const;

/** Where a failed attempt leaves the delivery, and its webhook when the delivery ran out of attempts. */
export interface FailureOutcome {
  /** `pending` with a next attempt, or `failed`; undefined when the claim was no longer ours. */
  status?: 'pending' | 'failed';
  /** When the delivery failed for good: whether that disabled its webhook. */
  webhookDisabled?: boolean;
}

/** The claim of this attempt: a result is recorded only while the delivery is still the one claimed. */
type Claim = Pick<ClaimedDelivery, 'tenant_id' | 'id' | 'attempts'>;

const EXAMPLE_CLAIM: Claim = {
  tenant_id: '00000000-0000-4000-8000-000000000001',
  id: '00000000-0000-4000-8000-000000000002',
  attempts: 1,
};
const EXAMPLE_NOW = new Date('2026-01-01T00:00:00Z');

/**
 * The workers' side of `webhook_deliveries`: claims across tenants, and the result of each attempt.
 * Each method is one statement, run in the change it is given (the worker's, or the retention job's).
 */
@Injectable()
export class DeliveriesRepository {
  /**
   * Claims up to `limit` due deliveries of every tenant, oldest first: pending, due at `now`, not under
   * a live lease, of an enabled webhook, and the first pending one of their webhook and entity (a later
   * event of an entity waits until the earlier one has succeeded or failed for good). Rows another
   * worker is claiming are skipped (`FOR UPDATE SKIP LOCKED`), and a claimed row is leased until
   * `leasedUntil`, so that several instances never hold one delivery at once while it is being sent,
   * and a delivery whose worker died is claimed again once the lease has run out.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_NOW, new Date('2026-01-01T00:01:00Z'), 20] })
  async claimDue(change: Change, now: Date, leasedUntil: Date, limit: number): Promise<ClaimedDelivery[]> {
    const rows = await queryRows<ClaimedDelivery>(
      change,
      `WITH due AS (
         SELECT d.tenant_id, d.id
           FROM webhook_deliveries d
           JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= $1
            AND (d.leased_until IS NULL OR d.leased_until < $1)
            AND w.status = 'enabled'
            AND NOT EXISTS (
              SELECT 1 FROM webhook_deliveries e
               WHERE e.tenant_id = d.tenant_id AND e.webhook_id = d.webhook_id AND e.entity_id = d.entity_id
                 AND e.status = 'pending' AND e.seq < d.seq)
          ORDER BY d.next_attempt_at, d.seq
          LIMIT $3
          FOR UPDATE OF d SKIP LOCKED
       )
       UPDATE webhook_deliveries d
          SET leased_until = $2, attempts = d.attempts + 1, updated_at = $1
         FROM due, webhook_events ev, webhooks w
        WHERE d.tenant_id = due.tenant_id AND d.id = due.id
          AND ev.tenant_id = d.tenant_id AND ev.id = d.event_id
          AND w.tenant_id = d.tenant_id AND w.id = d.webhook_id
       RETURNING ${columnsOf(WebhookDeliveryEntity, 'd', { only: CLAIMED })},
                 ev.data AS event_data, ev.created_at AS event_created_at, w.url, w.secret`,
      [now, leasedUntil, limit],
    );
    return rows;
  }

  /** The attempt was answered with a 2xx: the delivery succeeded, and its webhook's failure streak ends. */
  @GenerateSql({ change: true, params: [EXAMPLE_CLAIM, 200, EXAMPLE_NOW] })
  async recordSuccess(change: Change, claim: Claim, statusCode: number, now: Date): Promise<boolean> {
    const rows = await queryRows<{ webhook_id: string }>(
      change,
      `WITH done AS (
         UPDATE webhook_deliveries
            SET status = 'succeeded', last_status_code = $4, next_attempt_at = NULL, leased_until = NULL,
                updated_at = $5
          WHERE tenant_id = $1 AND id = $2 AND attempts = $3 AND status = 'pending'
         RETURNING tenant_id, webhook_id
       ), streak AS (
         UPDATE webhooks w SET consecutive_failures = 0
           FROM done WHERE w.tenant_id = done.tenant_id AND w.id = done.webhook_id AND w.consecutive_failures > 0
       )
       SELECT webhook_id FROM done`,
      [claim.tenant_id, claim.id, claim.attempts, statusCode, now],
    );
    return rows.length > 0;
  }

  /**
   * The attempt failed (`statusCode` null when there was no HTTP answer). With `retryAt` the delivery
   * waits for its next attempt; without, it is `failed` and counts against its webhook, which is
   * disabled at DISABLE_AFTER_FAILURES deliveries failed in a row.
   */
  @GenerateSql(
    {
      name: 'recordFailure (retried)',
      change: true,
      params: [EXAMPLE_CLAIM, 500, new Date('2026-01-01T00:00:30Z'), EXAMPLE_NOW],
    },
    {
      name: 'recordFailure (failed for good)',
      change: true,
      params: [EXAMPLE_CLAIM, null, null, EXAMPLE_NOW],
    },
  )
  async recordFailure(
    change: Change,
    claim: Claim,
    statusCode: number | null,
    retryAt: Date | null,
    now: Date,
  ): Promise<FailureOutcome> {
    if (retryAt) {
      const rows = await queryRows<unknown>(
        change,
        `UPDATE webhook_deliveries
            SET last_status_code = $4, next_attempt_at = $5, leased_until = NULL, updated_at = $6
          WHERE tenant_id = $1 AND id = $2 AND attempts = $3 AND status = 'pending'
         RETURNING 1`,
        [claim.tenant_id, claim.id, claim.attempts, statusCode, retryAt, now],
      );
      return rows.length ? { status: 'pending' } : {};
    }
    const rows = await queryRows<{ disabled: boolean | null }>(
      change,
      `WITH done AS (
         UPDATE webhook_deliveries
            SET status = 'failed', last_status_code = $4, next_attempt_at = NULL, leased_until = NULL,
                updated_at = $5
          WHERE tenant_id = $1 AND id = $2 AND attempts = $3 AND status = 'pending'
         RETURNING tenant_id, webhook_id
       ), streak AS (
         UPDATE webhooks w
            SET consecutive_failures = w.consecutive_failures + 1,
                status = CASE WHEN w.consecutive_failures + 1 >= $6 THEN 'disabled' ELSE w.status END
           FROM done WHERE w.tenant_id = done.tenant_id AND w.id = done.webhook_id
         RETURNING w.status, w.consecutive_failures
       )
       SELECT (SELECT status = 'disabled' AND consecutive_failures = $6 FROM streak) AS disabled FROM done`,
      [claim.tenant_id, claim.id, claim.attempts, statusCode, now, DISABLE_AFTER_FAILURES],
    );
    return rows.length ? { status: 'failed', webhookDisabled: rows[0].disabled === true } : {};
  }

  /**
   * Gives back deliveries claimed by a worker that is stopping before their sends ended: no longer leased,
   * and the claim's attempt not counted, so that any instance sends them again at once (same `webhook-id`).
   * Only while each is still the claim it was; returns how many were released.
   */
  @GenerateSql({ change: true, params: [[EXAMPLE_CLAIM], EXAMPLE_NOW] })
  async release(change: Change, claims: Claim[], now: Date): Promise<number> {
    const count = await affectedRows(
      change,
      `UPDATE webhook_deliveries d
          SET leased_until = NULL, attempts = d.attempts - 1, updated_at = $4
         FROM unnest($1::uuid[], $2::uuid[], $3::int[]) AS c(tenant_id, id, attempts)
        WHERE d.tenant_id = c.tenant_id AND d.id = c.id AND d.attempts = c.attempts AND d.status = 'pending'`,
      [claims.map((c) => c.tenant_id), claims.map((c) => c.id), claims.map((c) => c.attempts), now],
    );
    return count;
  }

  /**
   * Deletes the events created before `before` none of whose deliveries is still pending, with their
   * deliveries (cascade); returns how many events went.
   */
  @GenerateSql({ change: true, params: [new Date('2025-12-02T00:00:00Z')] })
  async purgeEndedEvents(change: Change, before: Date): Promise<number> {
    const count = await affectedRows(
      change,
      `DELETE FROM webhook_events e WHERE e.created_at < $1
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id AND d.status = 'pending')`,
      [before],
    );
    return count;
  }
}
