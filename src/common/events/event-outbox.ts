import type { ChangeWrites } from '../unit-of-work/write-batch';

/**
 * The events a change reports to webhooks. Services record them through this
 * port in the database transaction of the change itself (a transactional outbox): no event without
 * its change, no change without its event. The webhooks module implements it; common/ knows nothing
 * of webhooks.
 */
export const EVENT_TYPES = [
  'token:created',
  'token:updated',
  'token:deleted',
  'transaction:created',
  'transaction:updated',
  'connection:updated',
  'buyer:created',
  'buyer:updated',
  'buyer:deleted',
  'relay:refund:created',
  'relay:refund:succeeded',
  'relay:refund:failed',
  'application:created',
  'application:updated',
  'application:deleted',
  'audit:checkpoint',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const isEventType = (value: string): value is EventType =>
  (EVENT_TYPES as readonly string[]).includes(value);

export interface OutboxEvent {
  tenantId: string;
  type: EventType;
  /** The id of the entity the event is about: events of one entity reach a webhook in order. */
  entityId: string;
  /** The entity as the API returns it: masked, never clear data, never a secret. */
  data: object;
}

export abstract class EventOutbox {
  /** Records the events (in order) with the change: in its transaction, or in its one statement. */
  abstract record(change: ChangeWrites, events: OutboxEvent[]): Promise<void>;
}
