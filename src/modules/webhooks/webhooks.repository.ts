import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { cursorTimeSql } from '../../common/pagination/cursor-pagination';
import type { Change } from '../../common/unit-of-work/change';
import { GenerateSql } from '../../database/generate-sql';
import { SqlParams } from '../../database/sql';
import {
  assignmentsOf,
  computed,
  entitiesOf,
  joined,
  insertEntity,
  queryRows,
  select,
} from '../../database/table';
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

/** A webhook as the services use it: every column, under its property. */
const WEBHOOK = entitiesOf(WebhookEntity);
const DELIVERY = entitiesOf(WebhookDeliveryEntity);

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_WEBHOOK = '00000000-0000-4000-8000-000000000002';
const EXAMPLE_DELIVERY = '00000000-0000-4000-8000-000000000003';
const EXAMPLE_AT = new Date('2026-01-01T00:00:00.000Z');
const EXAMPLE: WebhookEntity = {
  tenantId: EXAMPLE_TENANT,
  id: EXAMPLE_WEBHOOK,
  name: 'Orders',
  url: 'https://example.com/hooks',
  events: ['token:created'],
  status: 'enabled',
  notifyEmail: null,
  secret: Buffer.alloc(32, 7),
  consecutiveFailures: 0,
  createdBy: EXAMPLE_WEBHOOK,
  createdAt: EXAMPLE_AT,
  modifiedBy: null,
  modifiedAt: null,
};

/**
 * Webhooks and their deliveries as the management API sees them: reads outside any change go through
 * the pool; writes, and the reads a write makes (row locks), take the change they belong to.
 */
@Injectable()
export class WebhooksRepository {
  constructor(private readonly dataSource: DataSource) {}

  @GenerateSql({ change: true, params: [EXAMPLE] })
  async insert(change: Change, webhook: WebhookEntity): Promise<void> {
    const { sql, params } = insertEntity(WebhookEntity, webhook);
    await change.query(sql, params);
  }

  @GenerateSql({ params: [EXAMPLE_TENANT, EXAMPLE_WEBHOOK] })
  async findOne(tenantId: string, id: string): Promise<WebhookEntity | null> {
    const [webhook] = await select(
      this.dataSource,
      WEBHOOK,
      (columns) => `SELECT ${columns} FROM webhooks WHERE tenant_id = $1 AND id = $2`,
      [tenantId, id],
    );
    return webhook ?? null;
  }

  /** The webhook, its row locked until the change ends. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_WEBHOOK] })
  async findLocked(change: Change, tenantId: string, id: string): Promise<WebhookEntity | null> {
    const [webhook] = await select(
      change,
      WEBHOOK,
      (columns) => `SELECT ${columns} FROM webhooks WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
      [tenantId, id],
    );
    return webhook ?? null;
  }

  /** Up to `take` webhooks oldest first, after the keyset (created_at, id) when given. */
  @GenerateSql(
    { name: 'first', params: [EXAMPLE_TENANT, undefined, 20] },
    {
      name: 'after',
      params: [EXAMPLE_TENANT, { createdAt: '2026-01-01T00:00:00.000001Z', id: EXAMPLE_WEBHOOK }, 20],
    },
  )
  async page(
    tenantId: string,
    after: { createdAt: string; id: string } | undefined,
    take: number,
  ): Promise<WebhookRow[]> {
    const p = new SqlParams();
    const where = [`w.tenant_id = ${p.add(tenantId)}`];
    if (after)
      where.push(`(w.created_at, w.id) > (${p.add(after.createdAt)}::timestamptz, ${p.add(after.id)}::uuid)`);
    const found = await select(
      this.dataSource,
      joined(
        entitiesOf(WebhookEntity, { alias: 'w' }),
        computed<{ cursor_at: string }>(`${cursorTimeSql('w.created_at')} AS cursor_at`),
      ),
      (columns) => `SELECT ${columns}
         FROM webhooks w WHERE ${where.join(' AND ')}
        ORDER BY w.created_at ASC, w.id ASC LIMIT ${p.add(take)}`,
      p.values,
    );
    return found.map(({ cursor_at, ...webhook }) => ({ webhook, cursorAt: cursor_at }));
  }

  @GenerateSql({
    change: true,
    params: [
      EXAMPLE_TENANT,
      EXAMPLE_WEBHOOK,
      {
        name: 'Orders',
        url: 'https://example.com/hooks',
        events: ['token:created', 'token:deleted'],
        status: 'enabled',
        notifyEmail: null,
        modifiedBy: EXAMPLE_WEBHOOK,
        modifiedAt: EXAMPLE_AT,
        consecutiveFailures: 0,
      },
    ],
  })
  async update(change: Change, tenantId: string, id: string, changes: WebhookChanges): Promise<void> {
    const p = new SqlParams();
    const where = `tenant_id = ${p.add(tenantId)} AND id = ${p.add(id)}`;
    await change.query(
      `UPDATE webhooks SET ${assignmentsOf(WebhookEntity, p, changes)} WHERE ${where}`,
      p.values,
    );
  }

  /** True when a row was deleted (its deliveries go with it). */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_WEBHOOK] })
  async delete(change: Change, tenantId: string, id: string): Promise<boolean> {
    const deleted = await queryRows<{ id: WebhookEntity['id'] }>(
      change,
      'DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2 RETURNING id',
      [tenantId, id],
    );
    return deleted.length > 0;
  }

  /** A webhook's deliveries newest first: `take` after skipping `skip`, and how many it has in all. */
  @GenerateSql({ params: [EXAMPLE_TENANT, EXAMPLE_WEBHOOK, 0, 20], answers: [[{ total: 0 }]] })
  async deliveryPage(
    tenantId: string,
    webhookId: string,
    skip: number,
    take: number,
  ): Promise<{ total: number; rows: WebhookDeliveryEntity[] }> {
    const matching = 'FROM webhook_deliveries d WHERE d.tenant_id = $1 AND d.webhook_id = $2';
    const [{ total }] = await queryRows<{ total: number }>(
      this.dataSource,
      `SELECT count(*)::int AS total ${matching}`,
      [tenantId, webhookId],
    );
    const found = await select(
      this.dataSource,
      entitiesOf(WebhookDeliveryEntity, { alias: 'd' }),
      (columns) => `SELECT ${columns} ${matching} ORDER BY d.created_at DESC, d.seq DESC OFFSET $3 LIMIT $4`,
      [tenantId, webhookId, skip, take],
    );
    return { total, rows: found };
  }

  /**
   * Makes a delivery of the webhook due now, whatever its status, and frees it of any lease; answers it
   * as it is then, or null when the webhook has no such delivery.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_WEBHOOK, EXAMPLE_DELIVERY, EXAMPLE_AT] })
  async retryDelivery(
    change: Change,
    tenantId: string,
    webhookId: string,
    id: string,
    now: Date,
  ): Promise<WebhookDeliveryEntity | null> {
    const [delivery] = await select(
      change,
      DELIVERY,
      (columns) => `UPDATE webhook_deliveries
          SET status = 'pending', next_attempt_at = $4, leased_until = NULL, updated_at = $4
        WHERE tenant_id = $1 AND webhook_id = $2 AND id = $3
        RETURNING ${columns}`,
      [tenantId, webhookId, id, now],
    );
    return delivery ?? null;
  }
}
