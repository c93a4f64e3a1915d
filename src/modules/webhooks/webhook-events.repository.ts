import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { OutboxEvent } from '../../common/events/event-outbox';
import type { ChangeWrites } from '../../common/unit-of-work/write-batch';
import type { PieceBuilder } from '../../common/unit-of-work/write-batch';
import { GenerateSql } from '../../database/generate-sql';
import type { RowOf } from '../../database/table';
import type { WebhookEventEntity } from './entities/webhook-event.entity';

/**
 * The outbox's tables as the writer of events sees them (`webhook_events`, and the pending
 * `webhook_deliveries` each event fans out to). One write, whatever the number of events: it joins the
 * change's one statement, or runs in its transaction.
 */
@Injectable()
export class WebhookEventsRepository {
  /**
   * Records the events with the change, in order, for every webhook of their tenant that is enabled and
   * subscribed to their type now; `fanned` gets the number of deliveries written once the write has run.
   */
  @GenerateSql({
    change: true,
    params: [
      [
        {
          tenantId: '00000000-0000-4000-8000-000000000001',
          type: 'token:created',
          entityId: '00000000-0000-4000-8000-000000000002',
          data: { id: '00000000-0000-4000-8000-000000000002', type: 'token' },
        },
      ],
      new Date('2026-01-01T00:00:00Z'),
    ],
  })
  async insert(
    change: ChangeWrites,
    events: OutboxEvent[],
    now: Date,
    fanned?: (deliveries: number) => void,
  ): Promise<void> {
    if (!events.length) return;
    await change.write(this.piece(events, now), { then: (deliveries) => fanned?.(Number(deliveries)) });
  }

  /**
   * The write itself: the event rows and their deliveries, as data-modifying CTEs; its result is the
   * number of deliveries written. Events whose tenant has no enabled webhook subscribed to their type
   * are not written at all.
   */
  private piece(list: OutboxEvent[], now: Date): PieceBuilder {
    // The event rows as the statement reads them (`given`), with their place in the list.
    const rows = list.map((e, i): Omit<RowOf<WebhookEventEntity>, 'created_at'> & { ord: number } => ({
      tenant_id: e.tenantId,
      id: randomUUID(),
      type: e.type,
      entity_id: e.entityId,
      data: e.data,
      ord: i,
    }));
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
