import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Module } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { afterCommit, deferredWrite, inOneStatement } from '../../common/context/transactional';
import { EventOutbox, OutboxEvent } from '../../common/events/event-outbox';
import type { ChangeWrites, PieceBuilder } from '../../common/unit-of-work/write-batch';
import { Clock } from '../../common/jobs/clock';
import { DatabaseModule } from '../../database/database.module';
import { WebhookDeliveryEntity } from './entities/webhook-delivery.entity';
import { WebhookEventEntity } from './entities/webhook-event.entity';
import { WebhookEntity } from './entities/webhook.entity';
import { DeliveryNudge } from './delivery/delivery-nudge';

/**
 * The outbox: the event row and one pending delivery per webhook of the tenant
 * that is enabled and subscribed to the type now, in the caller's transaction (or the one statement of a
 * `@OneStatement()` method), as one statement. After
 * the transaction commits, this process's delivery worker is nudged so that delivery does not wait for
 * its next poll.
 */
@Injectable()
export class WebhookOutbox extends EventOutbox {
  constructor(
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly nudge: DeliveryNudge,
  ) {
    super();
  }

  async record(events: OutboxEvent | OutboxEvent[]): Promise<void> {
    const list = Array.isArray(events) ? events : [events];
    if (!list.length) return;
    if (!this.db.isTransactionActive() && !inOneStatement())
      throw new Error('events recorded outside a transaction would not commit with their change');
    await deferredWrite(this.piece(list), {
      then: (deliveries) => {
        if (Number(deliveries) > 0) afterCommit(() => this.nudge.poke());
      },
    });
  }

  /** Records the events with the change; once it has committed, this process's delivery worker is nudged. */
  async recordIn(change: ChangeWrites, events: OutboxEvent[]): Promise<void> {
    if (!events.length) return;
    await change.write(this.piece(events), {
      then: (deliveries) => {
        if (Number(deliveries) > 0) change.afterCommit(() => this.nudge.poke());
      },
    });
  }

  private piece(list: OutboxEvent[]): PieceBuilder {
    const now = this.clock.now();
    const rows = list.map((e, i) => ({
      tenant_id: e.tenantId,
      id: randomUUID(),
      type: e.type,
      entity_id: e.entityId,
      data: e.data,
      ord: i,
    }));
    // Events whose tenant has no enabled webhook subscribed to their type are not written at all.
    return ({ p, name }) => {
      const [given, hooks, events, fanned] = ['given', 'hooks', 'events', 'fanned'].map(name);
      const rowsParam = p.add(JSON.stringify(rows));
      const at = p.add(now);
      return {
        ctes: [
          `${given} AS (
             SELECT * FROM jsonb_to_recordset(${rowsParam}::jsonb)
               AS g(tenant_id uuid, id uuid, type text, entity_id text, data jsonb, ord int))`,
          `${hooks} AS (
             SELECT g.id AS event_id, w.id AS webhook_id, g.ord
               FROM ${given} g JOIN webhooks w ON w.tenant_id = g.tenant_id
              WHERE w.status = 'enabled' AND g.type = ANY (w.events))`,
          `${events} AS (
             INSERT INTO webhook_events (tenant_id, id, type, entity_id, data, created_at)
             SELECT g.tenant_id, g.id, g.type, g.entity_id, g.data, ${at}::timestamptz FROM ${given} g
              WHERE EXISTS (SELECT 1 FROM ${hooks} h WHERE h.event_id = g.id)
              ORDER BY g.ord
             RETURNING tenant_id, id, type, entity_id)`,
          `${fanned} AS (
             INSERT INTO webhook_deliveries
               (tenant_id, id, webhook_id, event_id, event_type, entity_id, status, next_attempt_at, created_at, updated_at)
             SELECT e.tenant_id, gen_random_uuid(), h.webhook_id, e.id, e.type, e.entity_id, 'pending',
                    ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
               FROM ${events} e JOIN ${hooks} h ON h.event_id = e.id
              ORDER BY h.ord, h.webhook_id
             RETURNING 1)`,
        ],
        result: `(SELECT count(*)::int FROM ${fanned})`,
      };
    };
  }
}

/** The outbox and its tables, given to `EventsModule.forRoot` so that every module can record events. */
@Module({
  imports: [DatabaseModule.forFeature([WebhookEntity, WebhookEventEntity, WebhookDeliveryEntity])],
  providers: [WebhookOutbox, DeliveryNudge, { provide: EventOutbox, useExisting: WebhookOutbox }],
  exports: [EventOutbox, DeliveryNudge],
})
export class WebhookOutboxModule {}
