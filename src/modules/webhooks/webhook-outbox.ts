import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Module } from '@nestjs/common';
import { afterCommit, deferredWrite, inOneStatement } from '../../common/context/transactional';
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
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly nudge: DeliveryNudge,
    private readonly events: WebhookEventsRepository,
  ) {
    super();
  }

  /** The older path, for modules not yet writing through a change: joins the request's own write. */
  async record(events: OutboxEvent | OutboxEvent[]): Promise<void> {
    const list = Array.isArray(events) ? events : [events];
    if (!list.length) return;
    if (!this.db.isTransactionActive() && !inOneStatement())
      throw new Error('events recorded outside a transaction would not commit with their change');
    await deferredWrite(this.events.piece(list, this.clock.now()), {
      then: (deliveries) => {
        if (Number(deliveries) > 0) afterCommit(() => this.nudge.poke());
      },
    });
  }

  /** Records the events with the change; once it has committed, this process's delivery worker is nudged. */
  async recordIn(change: ChangeWrites, events: OutboxEvent[]): Promise<void> {
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
