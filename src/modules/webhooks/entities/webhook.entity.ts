import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

export type WebhookStatus = 'enabled' | 'disabled';

/** A tenant's webhook; its signing secret sealed with the tenant's key. */
@Entity({ name: 'webhooks' })
@Index('webhooks_tenant_created_idx', ['tenantId', 'createdAt', 'id'])
export class WebhookEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 2000 })
  url: string;

  @Column({ type: 'text', array: true })
  events: string[];

  @Column({ type: 'varchar', length: 20 })
  status: WebhookStatus;

  @Column({ name: 'notify_email', type: 'varchar', length: 320, nullable: true })
  notifyEmail: string | null;

  /** `whsec_...` sealed (AES-256-GCM) under the tenant's key, bound to the tenant and webhook ids. */
  @Column({ type: 'bytea' })
  secret: Buffer;

  /** Deliveries that ended `failed` since the last success; at 100 the webhook is disabled. */
  @Column({ name: 'consecutive_failures', type: 'integer', default: 0 })
  consecutiveFailures: number;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'modified_by', type: 'uuid', nullable: true })
  modifiedBy: string | null;

  @Column({ name: 'modified_at', type: 'timestamptz', nullable: true })
  modifiedAt: Date | null;
}
