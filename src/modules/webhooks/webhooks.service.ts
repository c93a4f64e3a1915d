import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AuditEntry } from '../../common/audit/audit.types';
import type { Principal } from '../../common/auth/principal';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { EVENT_TYPES, isEventType } from '../../common/events/event-outbox';
import { ValidationException } from '../../common/errors/domain.exception';
import type { FieldErrors } from '../../common/errors/problem.exception';
import { Clock } from '../../common/jobs/clock';
import { OutboundHttp } from '../../common/outbound/outbound-http.service';
import { OutboundError } from '../../common/outbound/outbound.types';
import {
  CURSOR_TIME,
  CURSOR_UUID,
  decodeCursor,
  encodeCursor,
} from '../../common/pagination/cursor-pagination';
import type { OffsetPaginationQueryDto } from '../../common/pagination/offset-pagination.dto';
import { offsetOf, offsetPage } from '../../common/pagination/offset-pagination';
import type { Change } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { DeliveryNudge } from './delivery/delivery-nudge';
import type { WebhookDeliveryDto, WebhookDeliveryPageDto } from './dto/webhook-delivery.dto';
import type {
  CreatedWebhookDto,
  CreateWebhookDto,
  ListWebhooksQueryDto,
  UpdateWebhookDto,
  WebhookDto,
  WebhookPageDto,
} from './dto/webhook.dto';
import type { WebhookDeliveryEntity } from './entities/webhook-delivery.entity';
import type { WebhookEntity } from './entities/webhook.entity';
import { generateWebhookSecret, sealWebhookSecret } from './webhook-secret';
import { WebhooksException } from './webhooks.errors';
import { WebhooksRepository } from './webhooks.repository';

/** A webhook as the API shows it: never its secret. */
export function webhookDto(webhook: WebhookEntity): WebhookDto {
  return {
    id: webhook.id,
    tenant_id: webhook.tenantId,
    status: webhook.status,
    name: webhook.name,
    url: webhook.url,
    events: [...webhook.events],
    notify_email: webhook.notifyEmail,
    created_by: webhook.createdBy,
    created_at: webhook.createdAt.toISOString(),
    modified_by: webhook.modifiedBy,
    modified_at: webhook.modifiedAt?.toISOString() ?? null,
  };
}

export function deliveryDto(delivery: WebhookDeliveryEntity): WebhookDeliveryDto {
  return {
    id: delivery.id,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    last_status_code: delivery.lastStatusCode,
    next_attempt_at: delivery.nextAttemptAt?.toISOString() ?? null,
    created_at: delivery.createdAt.toISOString(),
  };
}

/** The audit row of a write to a webhook. */
const entry = (id: string, operation: 'create' | 'update' | 'delete', message: string): AuditEntry => ({
  entityType: 'webhook',
  entityId: id,
  operation,
  message,
});

/**
 * The webhooks management API, always within the caller's tenant. Each write is one change, which
 * carries its audit row.
 */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly outbound: OutboundHttp,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly nudge: DeliveryNudge,
    private readonly work: UnitOfWork,
  ) {}

  eventTypes(): string[] {
    return [...EVENT_TYPES];
  }

  /**
   * The secret is answered here once, and kept only sealed under the tenant's key. The URL (which may
   * take a DNS lookup) and the tenant's key are settled before the change opens.
   */
  async create(origin: RequestOrigin, dto: CreateWebhookDto): Promise<CreatedWebhookDto> {
    const who = origin.actor;
    const url = await this.checked(dto);
    const id = randomUUID();
    const secret = generateWebhookSecret();
    const { encryption } = await this.tenantKeys.keysFor(who.tenantId);
    const webhook: WebhookEntity = {
      tenantId: who.tenantId,
      id,
      name: dto.name,
      url,
      events: dto.events,
      status: 'enabled',
      notifyEmail: dto.notify_email ?? null,
      secret: sealWebhookSecret(encryption, who.tenantId, id, secret),
      consecutiveFailures: 0,
      createdBy: who.applicationId,
      createdAt: this.clock.now(),
      modifiedBy: null,
      modifiedAt: null,
    };
    return this.work.transaction(origin, async (change) => {
      await this.webhooks.insert(change, webhook);
      change.audit(entry(id, 'create', 'Webhook created'));
      return { ...webhookDto(webhook), secret };
    });
  }

  async list(who: Principal, query: ListWebhooksQueryDto): Promise<WebhookPageDto> {
    const after =
      query.start !== undefined ? decodeCursor(query.start, [CURSOR_TIME, CURSOR_UUID]) : undefined;
    const rows = await this.webhooks.page(
      who.tenantId,
      after && { createdAt: after[0], id: after[1] },
      query.size + 1,
    );
    const page = rows.slice(0, query.size);
    const last = page[page.length - 1];
    return {
      pagination: {
        page_size: query.size,
        ...(rows.length > query.size && last ? { next: encodeCursor([last.cursorAt, last.webhook.id]) } : {}),
      },
      data: page.map((row) => webhookDto(row.webhook)),
    };
  }

  async get(who: Principal, id: string): Promise<WebhookDto> {
    return webhookDto(await this.findOwned(who, id));
  }

  /**
   * PUT replaces name, url and events; `status` and `notify_email` change only when given. Enabling a
   * webhook starts its count of consecutive failures afresh.
   */
  async update(origin: RequestOrigin, id: string, dto: UpdateWebhookDto): Promise<WebhookDto> {
    const who = origin.actor;
    // Checked first: the URL's name may take a DNS lookup, not to be waited for holding the row's lock.
    const url = await this.checked(dto);
    return this.work.transaction(origin, async (change) => {
      const webhook = await this.findLocked(change, who, id);
      const status = dto.status ?? webhook.status;
      const changes = {
        name: dto.name,
        url,
        events: dto.events,
        status,
        notifyEmail: dto.notify_email !== undefined ? dto.notify_email : webhook.notifyEmail,
        modifiedBy: who.applicationId,
        modifiedAt: this.clock.now(),
        ...(dto.status === 'enabled' ? { consecutiveFailures: 0 } : {}),
      };
      await this.webhooks.update(change, who.tenantId, id, changes);
      change.audit(entry(id, 'update', 'Webhook updated'));
      return webhookDto({ ...webhook, ...changes });
    });
  }

  async delete(origin: RequestOrigin, id: string): Promise<void> {
    const who = origin.actor;
    return this.work.transaction(origin, async (change) => {
      if (!(await this.webhooks.delete(change, who.tenantId, id))) throw WebhooksException.notFound();
      change.audit(entry(id, 'delete', 'Webhook deleted'));
    });
  }

  async deliveries(
    who: Principal,
    webhookId: string,
    query: OffsetPaginationQueryDto,
  ): Promise<WebhookDeliveryPageDto> {
    await this.findOwned(who, webhookId);
    const { skip, take } = offsetOf(query);
    const { total, rows } = await this.webhooks.deliveryPage(who.tenantId, webhookId, skip, take);
    return offsetPage(rows.map(deliveryDto), total, query);
  }

  /**
   * Sends a delivery again: it is made pending and due now (whatever its status, attempts kept), its
   * lease dropped; the delivery worker is nudged once this commits.
   */
  async retry(origin: RequestOrigin, webhookId: string, deliveryId: string): Promise<WebhookDeliveryDto> {
    const who = origin.actor;
    return this.work.transaction(origin, async (change) => {
      await this.findLocked(change, who, webhookId);
      const delivery = await this.webhooks.retryDelivery(
        change,
        who.tenantId,
        webhookId,
        deliveryId,
        this.clock.now(),
      );
      if (!delivery) throw WebhooksException.deliveryNotFound();
      change.audit(entry(webhookId, 'update', `Webhook delivery ${deliveryId} retried`));
      change.afterCommit(() => this.nudge.poke());
      return deliveryDto(delivery);
    });
  }

  private async findOwned(who: Principal, id: string): Promise<WebhookEntity> {
    const webhook = await this.webhooks.findOne(who.tenantId, id);
    if (!webhook) throw WebhooksException.notFound();
    return webhook;
  }

  /** The caller's webhook, its row locked for the rest of the change. */
  private async findLocked(change: Change, who: Principal, id: string): Promise<WebhookEntity> {
    const webhook = await this.webhooks.findLocked(change, who.tenantId, id);
    if (!webhook) throw WebhooksException.notFound();
    return webhook;
  }

  /**
   * The URL as given when it passes the outbound policy, after the event types are checked; every bad
   * field is named (`url`, `events[i]`).
   */
  private async checked(dto: CreateWebhookDto): Promise<string> {
    const errors: FieldErrors = {};
    dto.events.forEach((type, i) => {
      if (!isEventType(type))
        errors[`events[${i}]`] = ['is not an event type (GET /webhooks/event-types lists them)'];
    });
    try {
      await this.outbound.checkDestination(dto.url);
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      errors.url = [error.message];
    }
    if (Object.keys(errors).length) throw new ValidationException(errors);
    return dto.url;
  }
}
