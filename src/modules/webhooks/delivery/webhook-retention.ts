import { Injectable, OnModuleInit } from '@nestjs/common';
import { RetentionJob } from '../../../common/jobs/retention.job';
import { LOCK_KEYS } from '../../../database/data-source';
import { DeliveriesRepository } from './deliveries.repository';
import type { Change } from '../../../common/unit-of-work/change';

/** How long an event and its deliveries are kept once none of them is still pending. */
export const WEBHOOK_EVENT_RETENTION_DAYS = 30;

/**
 * Purges the outbox: events older than 30 days none of whose deliveries is still pending go, with their
 * deliveries (cascade). A pending delivery keeps its event whatever its age (retries end within about
 * seven hours by default, so this is a bound, not a rule that applies in practice).
 */
@Injectable()
export class WebhookRetention implements OnModuleInit {
  constructor(
    private readonly retention: RetentionJob,
    private readonly deliveries: DeliveriesRepository,
  ) {}

  onModuleInit(): void {
    this.retention.register({
      name: 'webhook-events',
      lockKey: LOCK_KEYS.jobWebhookEvents,
      periodMs: 60 * 60_000,
      purge: (change, now) => this.purge(change, now),
    });
  }

  purge(change: Change, now: Date): Promise<number> {
    return this.deliveries.purgeEndedEvents(
      change,
      new Date(now.getTime() - WEBHOOK_EVENT_RETENTION_DAYS * 24 * 3600_000),
    );
  }
}
