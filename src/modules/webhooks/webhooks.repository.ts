import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { cursorTimeSql } from '../../common/pagination/cursor-pagination';
import type { Change } from '../../common/unit-of-work/change';
import { WebhookDeliveryEntity } from './entities/webhook-delivery.entity';
import { WebhookEntity } from './entities/webhook.entity';

export type WebhookChanges = Pick<
  WebhookEntity,
  'name' | 'url' | 'events' | 'status' | 'notifyEmail' | 'modifiedBy' | 'modifiedAt'
> &
  Partial<Pick<WebhookEntity, 'consecutiveFailures'>>;

/** A webhook of a list page, with its keyset timestamp exact to the microsecond (for a cursor). */
export interface WebhookRow {
  webhook: WebhookEntity;
  cursorAt: string;
}

/**
 * Webhooks and their deliveries as the management API sees them: reads outside any change go through
 * the pool; writes, and the reads a write makes (row locks), take the change they belong to.
 */
@Injectable()
export class WebhooksRepository {
  constructor(private readonly dataSource: DataSource) {}

  async insert(change: Change, webhook: WebhookEntity): Promise<void> {
    await change.manager.getRepository(WebhookEntity).insert(webhook);
  }

  findOne(tenantId: string, id: string): Promise<WebhookEntity | null> {
    return this.dataSource.getRepository(WebhookEntity).findOne({ where: { tenantId, id } });
  }

  /** The webhook, its row locked until the change ends. */
  findLocked(change: Change, tenantId: string, id: string): Promise<WebhookEntity | null> {
    return change.manager.getRepository(WebhookEntity).findOne({
      where: { tenantId, id },
      lock: { mode: 'pessimistic_write' },
    });
  }

  /** Up to `take` webhooks oldest first, after the keyset (created_at, id) when given. */
  async page(
    tenantId: string,
    after: { createdAt: string; id: string } | undefined,
    take: number,
  ): Promise<WebhookRow[]> {
    const qb = this.dataSource
      .getRepository(WebhookEntity)
      .createQueryBuilder('w')
      .addSelect(cursorTimeSql('w.created_at'), 'cursor_at')
      .where('w.tenant_id = :tenant', { tenant: tenantId })
      .orderBy('w.created_at', 'ASC')
      .addOrderBy('w.id', 'ASC')
      .limit(take);
    if (after)
      qb.andWhere('(w.created_at, w.id) > (CAST(:afterAt AS timestamptz), CAST(:afterId AS uuid))', {
        afterAt: after.createdAt,
        afterId: after.id,
      });
    const { entities, raw } = await qb.getRawAndEntities<{ cursor_at: string }>();
    return entities.map((webhook, i) => ({ webhook, cursorAt: raw[i].cursor_at }));
  }

  async update(change: Change, tenantId: string, id: string, changes: WebhookChanges): Promise<void> {
    await change.manager.getRepository(WebhookEntity).update({ tenantId, id }, changes);
  }

  /** True when a row was deleted (its deliveries go with it). */
  async delete(change: Change, tenantId: string, id: string): Promise<boolean> {
    const result = await change.manager.getRepository(WebhookEntity).delete({ tenantId, id });
    return (result.affected ?? 0) > 0;
  }

  /** A webhook's deliveries newest first: `take` after skipping `skip`, and how many it has in all. */
  async deliveryPage(
    tenantId: string,
    webhookId: string,
    skip: number,
    take: number,
  ): Promise<{ total: number; rows: WebhookDeliveryEntity[] }> {
    const [rows, total] = await this.dataSource
      .getRepository(WebhookDeliveryEntity)
      .createQueryBuilder('d')
      .where('d.tenant_id = :tenantId AND d.webhook_id = :webhookId', { tenantId, webhookId })
      .orderBy('d.created_at', 'DESC')
      .addOrderBy('d.seq', 'DESC')
      .skip(skip)
      .take(take)
      .getManyAndCount();
    return { total, rows };
  }

  /**
   * Makes a delivery of the webhook due now, whatever its status, and frees it of any lease; answers it
   * as it is then, or null when the webhook has no such delivery.
   */
  async retryDelivery(
    change: Change,
    tenantId: string,
    webhookId: string,
    id: string,
    now: Date,
  ): Promise<WebhookDeliveryEntity | null> {
    const deliveries = change.manager.getRepository(WebhookDeliveryEntity);
    const result = await deliveries
      .createQueryBuilder()
      .update()
      .set({ status: 'pending', nextAttemptAt: now, leasedUntil: null, updatedAt: now })
      .where('tenant_id = :tenantId AND webhook_id = :webhookId AND id = :id', { tenantId, webhookId, id })
      .execute();
    if (!result.affected) return null;
    return deliveries.findOne({ where: { tenantId, id } });
  }
}
