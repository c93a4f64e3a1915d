import { randomUUID } from 'node:crypto';
import type { Principal } from '../../common/auth/principal';
import { ValidationException } from '../../common/errors/domain.exception';
import { Clock } from '../../common/jobs/clock';
import type { OutboundHttp } from '../../common/outbound/outbound-http.service';
import { OutboundError } from '../../common/outbound/outbound.types';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { DeliveryNudge } from './delivery/delivery-nudge';
import type { CreateWebhookDto, UpdateWebhookDto } from './dto/webhook.dto';
import { openWebhookSecret } from './webhook-secret';
import { WebhooksException } from './webhooks.errors';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

const APP = '00000000-0000-4000-8000-00000000000a';

let db: ServiceDatabase;
/** Each test's tenants, new for it. */
let TENANT: string;
let OTHER_TENANT: string;

beforeAll(async () => {
  db = await openServiceDatabase();
});
afterAll(() => db.close());
beforeEach(async () => {
  TENANT = await db.newTenant('webhooks');
  OTHER_TENANT = await db.newTenant('other');
});

/** The tenant's webhooks as the database holds them. */
const rows = () =>
  db.rows<{ id: string; name: string; secret: Buffer; consecutive_failures: number }>(
    'SELECT id, name, secret, consecutive_failures FROM webhooks WHERE tenant_id = $1 ORDER BY created_at',
    [TENANT],
  );

/** The tenant's audit rows, oldest first. */
const audit = () =>
  db.rows<{ actor_id: string; entity_type: string; entity_id: string; operation: string; message: string }>(
    `SELECT actor_id, entity_type, entity_id, operation, message FROM audit_logs WHERE tenant_id = $1
      ORDER BY created_at, ctid`,
    [TENANT],
  );

/** A failed delivery of one event to the webhook (its event row with it), as the worker leaves one. */
async function failedDelivery(webhookId: string): Promise<string> {
  const [eventId, id] = [randomUUID(), randomUUID()];
  await db.rows(
    `INSERT INTO webhook_events (tenant_id, id, type, entity_id, data, created_at)
     VALUES ($1, $2, 'token:created', 'tok', '{}', now())`,
    [TENANT, eventId],
  );
  await db.rows(
    `INSERT INTO webhook_deliveries (tenant_id, id, webhook_id, event_id, event_type, entity_id, status, attempts,
       last_status_code, next_attempt_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'token:created', 'tok', 'failed', 7, 500, NULL, now(), now())`,
    [TENANT, id, webhookId, eventId],
  );
  return id;
}

const deliveryStatus = async (id: string) =>
  (await db.rows<{ status: string }>('SELECT status FROM webhook_deliveries WHERE id = $1', [id]))[0].status;

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

describe('WebhooksService (real repository on PGlite)', () => {
  let clock: Clock;
  let nudge: DeliveryNudge;
  let pokes: number;
  let service: WebhooksService;
  /** The tenant's encryption key, which seals webhook secrets. */
  const tenantKey = async (tenantId = TENANT) => (await db.tenantKeys.keysFor(tenantId)).encryption;

  beforeEach(() => {
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
    service = new WebhooksService(
      new WebhooksRepository(db.dataSource),
      outbound,
      db.freshTenantKeys(),
      clock,
      nudge,
      db.work,
    );
  });

  const create = (body: CreateWebhookDto = dto(), who = principal()) => service.create(origin(who), body);

  describe('create', () => {
    it('writes the webhook in one change with its audit row, and answers its secret once', async () => {
      const created = await create();
      expect((await rows()).map((row) => row.id)).toEqual([created.id]);
      expect(await audit()).toEqual([
        {
          actor_id: APP,
          entity_type: 'webhook',
          entity_id: created.id,
          operation: 'create',
          message: 'Webhook created',
        },
      ]);
      expect(created).toMatchObject({ tenant_id: TENANT, status: 'enabled', created_by: APP });
      expect(created.secret).toMatch(/^whsec_/);
    });

    it('keeps the secret only sealed under the tenant key, bound to the webhook', async () => {
      const created = await create();
      const [row] = await rows();
      expect(row.secret.toString('latin1')).not.toContain(created.secret);
      const key = await tenantKey();
      expect(openWebhookSecret(key, TENANT, created.id, row.secret)).toBe(created.secret);
      expect(() => openWebhookSecret(key, OTHER_TENANT, created.id, row.secret)).toThrow();
      expect(() => openWebhookSecret(Buffer.alloc(32), TENANT, created.id, row.secret)).toThrow();
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
      expect(await audit()).toEqual([]);
      expect(await rows()).toEqual([]);
    });

    it("the change's actor is the caller (the audit writer adds a session's id to its rows)", async () => {
      const who = principal(TENANT, { keyKind: 'session', sessionId: 's-1' });
      await create(dto(), who);
      expect(await audit()).toEqual([
        expect.objectContaining({ actor_id: APP, message: 'Webhook created (session s-1)' }),
      ]);
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
      expect((await audit())[1]).toEqual({
        actor_id: APP,
        entity_type: 'webhook',
        entity_id: id,
        operation: 'update',
        message: 'Webhook updated',
      });
      expect((await rows())[0].name).toBe('Renamed');
    });

    it('clears notify_email when given null', async () => {
      const { id } = await create(dto({ notify_email: 'ops@merchant.example' }));
      expect((await service.update(origin(), id, dto({ notify_email: null }))).notify_email).toBeNull();
    });

    it('enabling starts the failure count afresh; disabling keeps it', async () => {
      const { id } = await create();
      await db.rows('UPDATE webhooks SET consecutive_failures = 42 WHERE id = $1', [id]);
      await service.update(origin(), id, dto({ status: 'disabled' }));
      expect((await rows())[0].consecutive_failures).toBe(42);
      await service.update(origin(), id, dto({ status: 'enabled' }));
      expect((await rows())[0].consecutive_failures).toBe(0);
    });

    it('checks the URL before the change opens (no lock held over a DNS lookup)', async () => {
      const { id } = await create();
      await expect(service.update(origin(), id, dto({ url: 'http://internal.example/' }))).rejects.toThrow(
        ValidationException,
      );
      expect(await audit()).toHaveLength(1);
    });

    it("another tenant's webhook is not found, and the change rolls back without an audit row", async () => {
      const { id } = await create();
      await expect(service.update(origin(principal(OTHER_TENANT)), id, dto())).rejects.toThrow(
        WebhooksException,
      );
      expect(await audit()).toHaveLength(1);
      expect((await rows())[0].name).toBe('Payments backend');
    });
  });

  describe('delete', () => {
    it('deletes in one change with its audit row', async () => {
      const { id } = await create();
      await service.delete(origin(), id);
      expect(await rows()).toEqual([]);
      expect((await audit())[1]).toEqual({
        actor_id: APP,
        entity_type: 'webhook',
        entity_id: id,
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
      expect(await audit()).toHaveLength(1);
      expect(await rows()).toHaveLength(1);
    });
  });

  describe('retry', () => {
    it('makes the delivery pending and due now, keeps its attempts, audits, and nudges after commit', async () => {
      const { id } = await create();
      const d = await failedDelivery(id);
      clock.advance(60_000);
      const retried = await service.retry(origin(), id, d);
      expect(retried).toMatchObject({ id: d, status: 'pending', attempts: 7 });
      const due = new Date(retried.next_attempt_at!).getTime();
      expect(due).toBeGreaterThan(Date.now() + 30_000);
      expect(due).toBeLessThanOrEqual(clock.now().getTime());
      expect(await deliveryStatus(d)).toBe('pending');
      expect((await audit())[1]).toEqual({
        actor_id: APP,
        entity_type: 'webhook',
        entity_id: id,
        operation: 'update',
        message: `Webhook delivery ${d} retried`,
      });
      expect(pokes).toBe(1);
    });

    it('a delivery of another webhook is not found; nothing is audited or nudged', async () => {
      const { id } = await create();
      const other = await create();
      const d = await failedDelivery(other.id);
      await expect(service.retry(origin(), id, d)).rejects.toMatchObject({ code: 'delivery_not_found' });
      expect(await audit()).toHaveLength(2);
      expect(pokes).toBe(0);
      expect(await deliveryStatus(d)).toBe('failed');
    });

    it("another tenant's webhook is not found before its deliveries are touched", async () => {
      const { id } = await create();
      const d = await failedDelivery(id);
      await expect(service.retry(origin(principal(OTHER_TENANT)), id, d)).rejects.toMatchObject({
        code: 'not_found',
      });
      expect(await deliveryStatus(d)).toBe('failed');
    });
  });

  describe('reads', () => {
    it('get answers the webhook without its secret, and opens no change', async () => {
      const { id } = await create();
      const got = await service.get(principal(), id);
      expect(got).not.toHaveProperty('secret');
      expect(got.id).toBe(id);
      expect(await audit()).toHaveLength(1);
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
