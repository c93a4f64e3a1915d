import { randomBytes, randomUUID } from 'node:crypto';
import type { Principal } from '../../common/auth/principal';
import type { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { ValidationException } from '../../common/errors/domain.exception';
import { Clock } from '../../common/jobs/clock';
import type { OutboundHttp } from '../../common/outbound/outbound-http.service';
import { OutboundError } from '../../common/outbound/outbound.types';
import type { Change } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { FakeUnitOfWork } from '../../../test/support/fake-unit-of-work';
import { DeliveryNudge } from './delivery/delivery-nudge';
import type { CreateWebhookDto, UpdateWebhookDto } from './dto/webhook.dto';
import type { WebhookDeliveryEntity } from './entities/webhook-delivery.entity';
import type { WebhookEntity } from './entities/webhook.entity';
import { openWebhookSecret } from './webhook-secret';
import { WebhooksException } from './webhooks.errors';
import type { WebhookChanges, WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

const TENANT = '00000000-0000-4000-8000-000000000001';
const OTHER_TENANT = '00000000-0000-4000-8000-000000000002';
const APP = '00000000-0000-4000-8000-00000000000a';

/** The webhooks table as the service sees it: rows by tenant and id; every write notes its change. */
class FakeWebhooks {
  readonly rows = new Map<string, WebhookEntity>();
  readonly deliveries: WebhookDeliveryEntity[] = [];
  /** The change of each write and locked read, in order. */
  readonly changes: { op: string; change: Change }[] = [];

  private static key = (tenantId: string, id: string) => `${tenantId}/${id}`;

  insert(change: Change, webhook: WebhookEntity): Promise<void> {
    this.changes.push({ op: 'insert', change });
    this.rows.set(FakeWebhooks.key(webhook.tenantId, webhook.id), { ...webhook });
    return Promise.resolve();
  }

  findOne(tenantId: string, id: string): Promise<WebhookEntity | null> {
    return Promise.resolve(this.rows.get(FakeWebhooks.key(tenantId, id)) ?? null);
  }

  findLocked(change: Change, tenantId: string, id: string): Promise<WebhookEntity | null> {
    this.changes.push({ op: 'lock', change });
    return this.findOne(tenantId, id);
  }

  update(change: Change, tenantId: string, id: string, changes: WebhookChanges): Promise<void> {
    this.changes.push({ op: 'update', change });
    const row = this.rows.get(FakeWebhooks.key(tenantId, id));
    if (row) Object.assign(row, changes);
    return Promise.resolve();
  }

  delete(change: Change, tenantId: string, id: string): Promise<boolean> {
    this.changes.push({ op: 'delete', change });
    return Promise.resolve(this.rows.delete(FakeWebhooks.key(tenantId, id)));
  }

  retryDelivery(
    change: Change,
    tenantId: string,
    webhookId: string,
    id: string,
    now: Date,
  ): Promise<WebhookDeliveryEntity | null> {
    this.changes.push({ op: 'retry', change });
    const delivery = this.deliveries.find(
      (d) => d.tenantId === tenantId && d.webhookId === webhookId && d.id === id,
    );
    if (!delivery) return Promise.resolve(null);
    Object.assign(delivery, { status: 'pending', nextAttemptAt: now, leasedUntil: null, updatedAt: now });
    return Promise.resolve({ ...delivery });
  }

  asRepository(): WebhooksRepository {
    return this as unknown as WebhooksRepository;
  }
}

const principal = (tenantId = TENANT, extra: Partial<Principal> = {}): Principal => ({
  tenantId,
  applicationId: APP,
  applicationType: 'private',
  keyKind: 'private',
  keyId: randomUUID(),
  authorized: true,
  permissions: ['webhook:create', 'webhook:read', 'webhook:update', 'webhook:delete'],
  rules: [],
  ...extra,
});

const origin = (who = principal()): RequestOrigin => ({ actor: who });

const dto = (overrides: Partial<UpdateWebhookDto> = {}): UpdateWebhookDto => ({
  name: 'Payments backend',
  url: 'https://receiver.example/hooks',
  events: ['token:created'],
  ...overrides,
});

describe('WebhooksService', () => {
  let repo: FakeWebhooks;
  let work: FakeUnitOfWork;
  let clock: Clock;
  let nudge: DeliveryNudge;
  let pokes: number;
  let service: WebhooksService;
  const tenantKey = randomBytes(32);

  beforeEach(() => {
    repo = new FakeWebhooks();
    work = new FakeUnitOfWork();
    clock = new Clock();
    nudge = new DeliveryNudge();
    pokes = 0;
    nudge.listen(() => pokes++);
    const outbound = {
      checkDestination: (url: string) => {
        if (url.includes('internal')) throw new OutboundError('destination_not_allowed', 'a private address');
        return Promise.resolve(new URL(url));
      },
    } as unknown as OutboundHttp;
    const tenantKeys = {
      keysFor: () => Promise.resolve({ encryption: tenantKey }),
    } as unknown as TenantKeysService;
    service = new WebhooksService(
      repo.asRepository(),
      outbound,
      tenantKeys,
      clock,
      nudge,
      work.asUnitOfWork(),
    );
  });

  const create = (body: CreateWebhookDto = dto(), who = principal()) => service.create(origin(who), body);

  describe('create', () => {
    it('writes the webhook in one change with its audit row, and answers its secret once', async () => {
      const created = await create();
      expect(work.committed).toHaveLength(1);
      expect(repo.changes.map((c) => c.op)).toEqual(['insert']);
      expect(repo.changes[0].change).toBe(work.committed[0]);
      expect(work.audit).toEqual([
        { entityType: 'webhook', entityId: created.id, operation: 'create', message: 'Webhook created' },
      ]);
      expect(created).toMatchObject({ tenant_id: TENANT, status: 'enabled', created_by: APP });
      expect(created.secret).toMatch(/^whsec_/);
    });

    it('keeps the secret only sealed under the tenant key, bound to the webhook', async () => {
      const created = await create();
      const row = await repo.findOne(TENANT, created.id);
      expect(row!.secret.toString('utf8')).not.toContain(created.secret);
      expect(openWebhookSecret(tenantKey, TENANT, created.id, row!.secret)).toBe(created.secret);
      expect(() => openWebhookSecret(tenantKey, OTHER_TENANT, created.id, row!.secret)).toThrow();
    });

    it('stamps the creation with the service clock', async () => {
      clock.advance(3_600_000);
      const before = clock.now().getTime();
      const created = await create();
      expect(new Date(created.created_at).getTime()).toBeGreaterThanOrEqual(before);
    });

    it('names every bad field, and opens no change', async () => {
      const error = await create(
        dto({ url: 'https://internal.example/', events: ['token:created', 'nope'] }),
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationException);
      expect((error as ValidationException).errors).toEqual({
        'events[1]': ['is not an event type (GET /webhooks/event-types lists them)'],
        url: ['a private address'],
      });
      expect(work.committed).toHaveLength(0);
      expect(repo.rows.size).toBe(0);
    });

    it("the change's actor is the caller (the audit writer adds a session's id to its rows)", async () => {
      const who = principal(TENANT, { keyKind: 'session', sessionId: 's-1' });
      await create(dto(), who);
      expect(work.committed[0].actor).toBe(who);
    });
  });

  describe('update', () => {
    it('replaces name, url and events, keeps status and notify_email when omitted, one audit row', async () => {
      const { id } = await create(dto({ notify_email: 'ops@merchant.example' }));
      const updated = await service.update(
        origin(),
        id,
        dto({ name: 'Renamed', url: 'https://other.example/h', events: ['token:deleted'] }),
      );
      expect(updated).toMatchObject({
        name: 'Renamed',
        url: 'https://other.example/h',
        events: ['token:deleted'],
        status: 'enabled',
        notify_email: 'ops@merchant.example',
        modified_by: APP,
      });
      expect(work.committed).toHaveLength(2);
      expect(work.audit[1]).toEqual({
        entityType: 'webhook',
        entityId: id,
        operation: 'update',
        message: 'Webhook updated',
      });
      expect(repo.changes.slice(1).map((c) => c.op)).toEqual(['lock', 'update']);
      expect(repo.changes.slice(1).every((c) => c.change === work.committed[1])).toBe(true);
    });

    it('clears notify_email when given null', async () => {
      const { id } = await create(dto({ notify_email: 'ops@merchant.example' }));
      expect((await service.update(origin(), id, dto({ notify_email: null }))).notify_email).toBeNull();
    });

    it('enabling starts the failure count afresh; disabling keeps it', async () => {
      const { id } = await create();
      repo.rows.get(`${TENANT}/${id}`)!.consecutiveFailures = 42;
      await service.update(origin(), id, dto({ status: 'disabled' }));
      expect(repo.rows.get(`${TENANT}/${id}`)!.consecutiveFailures).toBe(42);
      await service.update(origin(), id, dto({ status: 'enabled' }));
      expect(repo.rows.get(`${TENANT}/${id}`)!.consecutiveFailures).toBe(0);
    });

    it('checks the URL before the change opens (no lock held over a DNS lookup)', async () => {
      const { id } = await create();
      await expect(service.update(origin(), id, dto({ url: 'http://internal.example/' }))).rejects.toThrow(
        ValidationException,
      );
      expect(work.committed).toHaveLength(1);
      expect(work.rolledBack).toHaveLength(0);
    });

    it("another tenant's webhook is not found, and the change rolls back without an audit row", async () => {
      const { id } = await create();
      await expect(service.update(origin(principal(OTHER_TENANT)), id, dto())).rejects.toThrow(
        WebhooksException,
      );
      expect(work.rolledBack).toHaveLength(1);
      expect(work.audit).toHaveLength(1);
      expect(repo.rows.get(`${TENANT}/${id}`)!.name).toBe('Payments backend');
    });
  });

  describe('delete', () => {
    it('deletes in one change with its audit row', async () => {
      const { id } = await create();
      await service.delete(origin(), id);
      expect(repo.rows.size).toBe(0);
      expect(work.audit[1]).toEqual({
        entityType: 'webhook',
        entityId: id,
        operation: 'delete',
        message: 'Webhook deleted',
      });
    });

    it('an unknown id, or one of another tenant, is a 404 that records nothing', async () => {
      const { id } = await create();
      await expect(service.delete(origin(principal(OTHER_TENANT)), id)).rejects.toMatchObject({
        code: 'not_found',
      });
      await expect(service.delete(origin(), randomUUID())).rejects.toMatchObject({ code: 'not_found' });
      expect(work.rolledBack).toHaveLength(2);
      expect(work.audit).toHaveLength(1);
      expect(repo.rows.size).toBe(1);
    });
  });

  describe('retry', () => {
    const delivery = (webhookId: string, tenantId = TENANT): WebhookDeliveryEntity => ({
      tenantId,
      id: randomUUID(),
      seq: '1',
      webhookId,
      eventId: randomUUID(),
      eventType: 'token:created',
      entityId: randomUUID(),
      status: 'failed',
      attempts: 7,
      lastStatusCode: 500,
      nextAttemptAt: null,
      leasedUntil: null,
      createdAt: new Date('2026-01-01T00:00:00Z'),
      updatedAt: new Date('2026-01-01T00:00:00Z'),
    });

    it('makes the delivery pending and due now, keeps its attempts, audits, and nudges after commit', async () => {
      const { id } = await create();
      const d = delivery(id);
      repo.deliveries.push(d);
      clock.advance(60_000);
      const retried = await service.retry(origin(), id, d.id);
      expect(retried).toMatchObject({ id: d.id, status: 'pending', attempts: 7 });
      expect(new Date(retried.next_attempt_at!).getTime()).toBeGreaterThan(Date.now() + 30_000);
      expect(work.audit[1]).toEqual({
        entityType: 'webhook',
        entityId: id,
        operation: 'update',
        message: `Webhook delivery ${d.id} retried`,
      });
      expect(pokes).toBe(1);
    });

    it('a delivery of another webhook is not found; nothing is audited or nudged', async () => {
      const { id } = await create();
      const other = await create();
      const d = delivery(other.id);
      repo.deliveries.push(d);
      await expect(service.retry(origin(), id, d.id)).rejects.toMatchObject({ code: 'delivery_not_found' });
      expect(work.rolledBack).toHaveLength(1);
      expect(work.audit).toHaveLength(2);
      expect(pokes).toBe(0);
      expect(d.status).toBe('failed');
    });

    it("another tenant's webhook is not found before its deliveries are touched", async () => {
      const { id } = await create();
      repo.deliveries.push(delivery(id));
      await expect(
        service.retry(origin(principal(OTHER_TENANT)), id, repo.deliveries[0].id),
      ).rejects.toMatchObject({ code: 'not_found' });
      expect(repo.changes.map((c) => c.op)).not.toContain('retry');
    });
  });

  describe('reads', () => {
    it('get answers the webhook without its secret, and opens no change', async () => {
      const { id } = await create();
      const got = await service.get(principal(), id);
      expect(got).not.toHaveProperty('secret');
      expect(got.id).toBe(id);
      expect(work.committed).toHaveLength(1);
    });

    it("get of another tenant's webhook is a 404", async () => {
      const { id } = await create();
      await expect(service.get(principal(OTHER_TENANT), id)).rejects.toMatchObject({ code: 'not_found' });
    });

    it('lists the event types a webhook may take', () => {
      expect(service.eventTypes()).toContain('token:created');
    });
  });
});
