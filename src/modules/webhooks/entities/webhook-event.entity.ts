import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** One event of the outbox, written in the transaction of the change it reports. */
@Entity({ name: 'webhook_events' })
@Index('webhook_events_created_idx', ['createdAt'])
export class WebhookEventEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** Sent as `webhook-id`: the same on every attempt, so that receivers can drop duplicates. */
  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 60 })
  type: string;

  @Column({ name: 'entity_id', type: 'varchar', length: 400 })
  entityId: string;

  /** The entity as the API returns it when the event is recorded (masked, no secret). */
  @Column({ type: 'jsonb' })
  data: object;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
