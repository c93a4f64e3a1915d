import { Injectable, Module } from '@nestjs/common';
import { EventOutbox, OutboxEvent } from '../../common/events/event-outbox';
import type { ChangeWrites } from '../../common/unit-of-work/write-batch';
import { Clock } from '../../common/jobs/clock';
import { DatabaseModule } from '../../database/database.module';
import { WebhookDeliveryEntity } from './entities/webhook-delivery.entity';
import { WebhookEventEntity } from './entities/webhook-event.entity';
import { WebhookEntity } from './entities/webhook.entity';
import { DeliveryNudge } from './delivery/delivery-nudge';
import { WebhookEventsRepository } from './webhook-events.repository';

/**
 * The outbox: the event rows and one pending delivery per webhook of the tenant that is enabled and
 * subscribed to the type now, written with the change that reports them (its transaction, or its one
 * statement) by WebhookEventsRepository. Once the change has committed, this process's delivery worker
 * is nudged so that delivery does not wait for its next poll.
 */
@Injectable()
export class WebhookOutbox extends EventOutbox {
  constructor(
    private readonly clock: Clock,
    private readonly nudge: DeliveryNudge,
    private readonly events: WebhookEventsRepository,
  ) {
    super();
  }

  /** Records the events with the change; once it has committed, this process's delivery worker is nudged. */
  async record(change: ChangeWrites, events: OutboxEvent[]): Promise<void> {
    await this.events.insert(change, events, this.clock.now(), (deliveries) => {
      if (deliveries > 0) change.afterCommit(() => this.nudge.poke());
    });
  }
}

/** The outbox and its tables, given to `EventsModule.forRoot` so that every module can record events. */
@Module({
  imports: [DatabaseModule.forFeature([WebhookEntity, WebhookEventEntity, WebhookDeliveryEntity])],
  providers: [
    WebhookOutbox,
    WebhookEventsRepository,
    DeliveryNudge,
    { provide: EventOutbox, useExisting: WebhookOutbox },
  ],
  exports: [EventOutbox, DeliveryNudge],
})
export class WebhookOutboxModule {}
