import { Column, Entity, PrimaryColumn } from 'typeorm';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/**
 * One event for one webhook. Made when the event is recorded (for the webhooks subscribed then);
 * claimed by a worker under a lease (`leased_until`), in `seq` order per webhook and entity.
 */
@Entity({ name: 'webhook_deliveries' })
export class WebhookDeliveryEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  /** Recording order: a delivery waits for every earlier pending one of its webhook and entity. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ name: 'webhook_id', type: 'uuid' })
  webhookId: string;

  @Column({ name: 'event_id', type: 'uuid' })
  eventId: string;

  @Column({ name: 'event_type', type: 'varchar', length: 60 })
  eventType: string;

  @Column({ name: 'entity_id', type: 'varchar', length: 400 })
  entityId: string;

  @Column({ type: 'varchar', length: 20 })
  status: DeliveryStatus;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'last_status_code', type: 'integer', nullable: true })
  lastStatusCode: number | null;

  /** When a pending delivery is (next) due; null once it ended (succeeded or failed for good). */
  @Column({ name: 'next_attempt_at', type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null;

  @Column({ name: 'leased_until', type: 'timestamptz', nullable: true })
  leasedUntil: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
