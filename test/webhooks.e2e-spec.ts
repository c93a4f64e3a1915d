import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { permissionsFor } from '../src/common/auth/permissions';
import { TenantKeysService } from '../src/common/crypto/tenant-keys.service';
import { EVENT_TYPES } from '../src/common/events/event-outbox';
import { DeliveryNudge } from '../src/modules/webhooks/delivery/delivery-nudge';
import { openWebhookSecret } from '../src/modules/webhooks/webhook-secret';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Unresolvable here, so the outbound policy accepts it (every connection is checked again). */
const URL_OK = 'https://receiver.example/hook';

interface DeliveryRow {
  id: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  lastStatusCode: number | null;
  nextAttemptAt: Date;
  leasedUntil: Date | null;
  createdAt: Date;
}

/**
 * The webhooks management API (docs/webhooks.md): CRUD, the secret shown once and kept sealed, the
 * validation of urls and event types, permissions, tenant isolation, the deliveries list and retry, and
 * the audit trail.
 */
describe('webhooks: management API', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let other: TestTenant;
  let mgmt: string;

  beforeAll(async () => {
    t = await startApp();
    db = t.app.get(DataSource);
    [tenant, other] = await Promise.all([newTenant(t), newTenant(t, 'other tenant')]);
    mgmt = tenant.managementKey;
  });
  afterAll(() => t?.close());

  const api = (method: 'get' | 'post' | 'put' | 'delete', path: string, key = mgmt) =>
    request(t.http)[method](path).set('BT-API-KEY', key);
  const create = async (body: object = {}, key = mgmt) =>
    (
      await api('post', '/webhooks', key)
        .send({ name: 'hook', url: URL_OK, events: ['token:created'], ...body })
        .expect(201)
    ).body as Record<string, unknown> & { id: string; secret: string };

  /** An event of the tenant and one delivery of it per given row, written as the outbox would. */
  async function deliveries(tenantId: string, webhookId: string, rows: Partial<DeliveryRow>[]) {
    const made: DeliveryRow[] = [];
    for (const [i, row] of rows.entries()) {
      const eventId = randomUUID();
      const at = row.createdAt ?? new Date(Date.now() - (rows.length - i) * 1000);
      await db.query(
        `INSERT INTO webhook_events (tenant_id, id, type, entity_id, data, created_at)
         VALUES ($1, $2, 'token:created', $3, '{"id":"x"}', $4)`,
        [tenantId, eventId, `entity-${i}`, at],
      );
      const d: DeliveryRow = {
        id: randomUUID(),
        status: row.status ?? 'succeeded',
        attempts: row.attempts ?? 1,
        lastStatusCode: row.lastStatusCode === undefined ? 200 : row.lastStatusCode,
        nextAttemptAt: row.nextAttemptAt ?? at,
        leasedUntil: row.leasedUntil ?? null,
        createdAt: at,
      };
      await db.query(
        `INSERT INTO webhook_deliveries (tenant_id, id, webhook_id, event_id, event_type, entity_id, status,
           attempts, last_status_code, next_attempt_at, leased_until, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'token:created', $5, $6, $7, $8, $9, $10, $11, $11)`,
        [
          tenantId,
          d.id,
          webhookId,
          eventId,
          `entity-${i}`,
          d.status,
          d.attempts,
          d.lastStatusCode,
          d.nextAttemptAt,
          d.leasedUntil,
          at,
        ],
      );
      made.push({ ...d, eventId } as DeliveryRow & { eventId: string });
    }
    return made as (DeliveryRow & { eventId: string })[];
  }

  describe('create, read, update, delete', () => {
    it('creates an enabled webhook and answers its secret once', async () => {
      const res = await api('post', '/webhooks')
        .send({
          name: 'Payments backend',
          url: 'https://receiver.example/hooks?account=42',
          events: ['transaction:updated', 'token:created'],
          notify_email: 'ops@merchant.example',
        })
        .expect(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        tenant_id: tenant.tenantId,
        status: 'enabled',
        name: 'Payments backend',
        url: 'https://receiver.example/hooks?account=42',
        events: ['transaction:updated', 'token:created'],
        notify_email: 'ops@merchant.example',
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
        created_by: tenant.managementApplicationId,
        created_at: expect.stringMatching(ISO),
        modified_by: null,
        modified_at: null,
      });
      expect(Buffer.from(res.body.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

      const { secret, ...shown } = res.body;
      const got = await api('get', `/webhooks/${res.body.id}`).expect(200);
      expect(got.body).toEqual(shown);
      expect(got.text).not.toContain(secret);
    });

    it('keeps the secret sealed under the tenant key: no column, log line or audit row holds it', async () => {
      const made = await create({ url: 'https://receiver.example/in?token=query-secret' });
      const clear = made.secret;
      const [row]: { whole: string; secret: Buffer }[] = await db.query(
        `SELECT row_to_json(w)::text AS whole, secret FROM webhooks w WHERE tenant_id = $1 AND id = $2`,
        [tenant.tenantId, made.id],
      );
      const body = clear.slice('whsec_'.length);
      expect(row.whole).not.toContain(body);
      expect(row.secret.toString('latin1')).not.toContain(body);
      expect(row.secret.toString('base64')).not.toContain(body);
      expect(row.secret.toString('hex')).not.toContain(Buffer.from(body, 'base64').toString('hex'));
      // Sealed with the tenant's key and bound to the tenant and the webhook.
      const { encryption } = await t.app.get(TenantKeysService).keysFor(tenant.tenantId);
      expect(openWebhookSecret(encryption, tenant.tenantId, made.id, row.secret)).toBe(clear);
      expect(() => openWebhookSecret(encryption, other.tenantId, made.id, row.secret)).toThrow();

      const audit: { all: string }[] = await db.query(
        `SELECT string_agg(message, ' ') AS all FROM audit_logs WHERE tenant_id = $1`,
        [tenant.tenantId],
      );
      expect(audit[0].all).not.toContain(body);
      expect(audit[0].all).not.toContain('query-secret');
      expect(t.logs.join('\n')).not.toContain(body);
    });

    it('never replays a create (and keeps no idempotency record of its secret)', async () => {
      const send = () =>
        api('post', '/webhooks')
          .set('BT-IDEMPOTENCY-KEY', 'webhook-create-once')
          .send({ name: 'idempotent', url: URL_OK, events: ['token:created'] })
          .expect(201);
      const first = await send();
      const second = await send();
      expect(second.headers['bt-idempotency-replayed']).toBeUndefined();
      expect(second.body.id).not.toBe(first.body.id);
      expect(second.body.secret).not.toBe(first.body.secret);
      const [{ n }]: { n: number }[] = await db.query(
        `SELECT count(*)::int AS n FROM idempotency_records WHERE tenant_id = $1`,
        [tenant.tenantId],
      );
      expect(n).toBe(0);
    });

    it('lists by cursor: size, pagination.next, start; oldest first, never a secret', async () => {
      const own = await newTenant(t, 'list tenant');
      const made = [];
      for (const name of ['first', 'second', 'third']) made.push(await create({ name }, own.managementKey));
      const first = await api('get', '/webhooks', own.managementKey).query({ size: 2 }).expect(200);
      expect(first.body.pagination).toEqual({ page_size: 2, next: expect.any(String) });
      expect(first.body.data.map((w: { name: string }) => w.name)).toEqual(['first', 'second']);
      for (const w of first.body.data) expect(w).not.toHaveProperty('secret');
      const { secret, ...shown } = made[0];
      expect(secret).toBeDefined();
      expect(first.body.data[0]).toEqual(shown);
      const second = await api('get', '/webhooks', own.managementKey)
        .query({ size: 2, start: first.body.pagination.next })
        .expect(200);
      expect(second.body).toEqual({
        pagination: { page_size: 2 },
        data: [expect.objectContaining({ name: 'third' })],
      });
      const all = await api('get', '/webhooks', own.managementKey).expect(200);
      expect(all.body.pagination).toEqual({ page_size: 20 });
      expect(all.body.data).toHaveLength(3);
      for (const secretOf of made.map((m) => m.secret)) {
        expect(first.text + second.text + all.text).not.toContain(secretOf);
      }

      const badCursor = await api('get', '/webhooks', own.managementKey).query({ start: 'not-a-cursor' });
      expectProblem(badCursor, 400);
      expect(Object.keys(badCursor.body.errors)).toEqual(['start']);
      for (const size of ['0', '101', 'x']) {
        const bad = await api('get', '/webhooks', own.managementKey).query({ size });
        expectProblem(bad, 400);
        expect(Object.keys(bad.body.errors)).toEqual(['size']);
      }
    });

    it('PUT replaces name, url and events; status and notify_email change only when given', async () => {
      const made = await create({ notify_email: 'ops@merchant.example' });
      const res = await api('put', `/webhooks/${made.id}`)
        .send({ name: 'renamed', url: 'https://receiver.example/v2', events: ['application:deleted'] })
        .expect(200);
      expect(res.body).toEqual({
        id: made.id,
        tenant_id: tenant.tenantId,
        status: 'enabled',
        name: 'renamed',
        url: 'https://receiver.example/v2',
        events: ['application:deleted'],
        notify_email: 'ops@merchant.example',
        created_by: tenant.managementApplicationId,
        created_at: made.created_at,
        modified_by: tenant.managementApplicationId,
        modified_at: expect.stringMatching(ISO),
      });
      expect((await api('get', `/webhooks/${made.id}`).expect(200)).body).toEqual(res.body);

      const disabled = await api('put', `/webhooks/${made.id}`)
        .send({
          name: 'renamed',
          url: URL_OK,
          events: ['token:created'],
          status: 'disabled',
          notify_email: null,
        })
        .expect(200);
      expect(disabled.body).toMatchObject({ status: 'disabled', notify_email: null });
      expect(disabled.body).not.toHaveProperty('secret');
      // A rename keeps it disabled (the SDK's update sends no status).
      await api('put', `/webhooks/${made.id}`)
        .send({ name: 'still off', url: URL_OK, events: ['token:created'] })
        .expect(200)
        .expect((r) => expect(r.body.status).toBe('disabled'));
    });

    it('enabling a webhook starts its count of consecutive failures afresh', async () => {
      const made = await create();
      const failures = async () =>
        (
          await db.query(`SELECT consecutive_failures AS n FROM webhooks WHERE tenant_id = $1 AND id = $2`, [
            tenant.tenantId,
            made.id,
          ])
        )[0].n as number;
      await db.query(
        `UPDATE webhooks SET status = 'disabled', consecutive_failures = 100 WHERE tenant_id = $1 AND id = $2`,
        [tenant.tenantId, made.id],
      );
      await api('put', `/webhooks/${made.id}`)
        .send({ name: 'hook', url: URL_OK, events: ['token:created'] })
        .expect(200);
      expect(await failures()).toBe(100);
      const res = await api('put', `/webhooks/${made.id}`)
        .send({ name: 'hook', url: URL_OK, events: ['token:created'], status: 'enabled' })
        .expect(200);
      expect(res.body.status).toBe('enabled');
      expect(await failures()).toBe(0);
    });

    it('DELETE answers 204, the webhook and its deliveries are gone', async () => {
      const made = await create();
      await deliveries(tenant.tenantId, made.id, [{ status: 'failed' }, { status: 'pending' }]);
      const res = await api('delete', `/webhooks/${made.id}`).expect(204);
      expect(res.text).toBe('');
      expectProblem(await api('get', `/webhooks/${made.id}`), 404);
      expectProblem(await api('delete', `/webhooks/${made.id}`), 404);
      const [{ n }]: { n: number }[] = await db.query(
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2`,
        [tenant.tenantId, made.id],
      );
      expect(n).toBe(0);
    });

    it('an unknown or malformed id is a 404', async () => {
      for (const id of [randomUUID(), 'not-a-uuid']) {
        expectProblem(await api('get', `/webhooks/${id}`), 404);
        expectProblem(
          await api('put', `/webhooks/${id}`).send({ name: 'x', url: URL_OK, events: ['token:created'] }),
          404,
        );
        expectProblem(await api('delete', `/webhooks/${id}`), 404);
        expectProblem(await api('get', `/webhooks/${id}/deliveries`), 404);
      }
    });

    it('writes audit rows of entity type webhook for create, read, update and delete', async () => {
      const own = await newTenant(t, 'audit tenant');
      const key = own.managementKey;
      const made = await create({ url: 'https://receiver.example/a?sig=query-secret' }, key);
      await api('get', `/webhooks/${made.id}`, key).expect(200);
      await api('get', '/webhooks', key).expect(200);
      await api('put', `/webhooks/${made.id}`, key)
        .send({ name: 'x', url: 'https://receiver.example/b?sig=query-secret', events: ['token:created'] })
        .expect(200);
      await api('get', `/webhooks/${made.id}/deliveries`, key).expect(200);
      await api('delete', `/webhooks/${made.id}`, key).expect(204);
      const rows: { entity_id: string | null; operation: string; message: string }[] = await db.query(
        `SELECT entity_id, operation, message FROM audit_logs
          WHERE tenant_id = $1 AND entity_type = 'webhook' ORDER BY created_at, id`,
        [own.tenantId],
      );
      expect(rows).toEqual([
        { entity_id: made.id, operation: 'create', message: 'Webhook created' },
        { entity_id: made.id, operation: 'read', message: 'Webhook read' },
        { entity_id: null, operation: 'read', message: 'Webhooks listed' },
        { entity_id: made.id, operation: 'update', message: 'Webhook updated' },
        { entity_id: made.id, operation: 'read', message: 'Webhook deliveries listed' },
        { entity_id: made.id, operation: 'delete', message: 'Webhook deleted' },
      ]);
      const text = JSON.stringify(rows);
      expect(text).not.toContain(made.secret.slice('whsec_'.length));
      expect(text).not.toContain('query-secret');
      const types = await api('get', '/logs/entity-types', key).expect(200);
      expect(types.body).toContainEqual({ display_name: 'Webhook', value: 'webhook' });
    });
  });

  describe('validation (400 naming the field, nothing created)', () => {
    const base = { name: 'hook', url: URL_OK, events: ['token:created'] };
    const cases: [string, object, string[]][] = [
      ['an unknown event type', { events: ['token:created', 'token:exploded'] }, ['events[1]']],
      ['empty events', { events: [] }, ['events']],
      ['repeated events', { events: ['token:created', 'token:created'] }, ['events']],
      ['events not an array', { events: 'token:created' }, ['events']],
      ['a private address', { url: 'http://10.0.0.1/' }, ['url']],
      ['the metadata address', { url: 'http://169.254.169.254/latest/meta-data' }, ['url']],
      ['loopback', { url: 'http://127.0.0.1:8080/hook' }, ['url']],
      ['a scheme other than http(s)', { url: 'ftp://receiver.example/hook' }, ['url']],
      ['no url at all', { url: 'not a url' }, ['url']],
      [
        'a refused url and an unknown type together',
        { url: 'http://10.0.0.1/', events: ['nope'] },
        ['events[0]', 'url'],
      ],
      ['an empty name', { name: '' }, ['name']],
      ['a name over 200 characters', { name: 'x'.repeat(201) }, ['name']],
      ['a bad notify_email', { notify_email: 'not-an-email' }, ['notify_email']],
      ['an unknown field', { secret: 'whsec_mine' }, ['secret']],
    ];
    for (const [what, change, fields] of cases) {
      it(`POST with ${what} → 400 naming ${fields.join(', ')}`, async () => {
        const before = await db.query(`SELECT count(*)::int AS n FROM webhooks WHERE tenant_id = $1`, [
          tenant.tenantId,
        ]);
        const res = await api('post', '/webhooks').send({ ...base, ...change });
        expectProblem(res, 400);
        expect(Object.keys(res.body.errors).sort()).toEqual(fields);
        const after = await db.query(`SELECT count(*)::int AS n FROM webhooks WHERE tenant_id = $1`, [
          tenant.tenantId,
        ]);
        expect(after).toEqual(before);
      });
    }

    it('PUT is validated the same way and leaves the webhook as it was', async () => {
      const made = await create();
      const { secret, ...shown } = made;
      expect(secret).toBeDefined();
      for (const [change, field] of [
        [{ url: 'http://169.254.169.254/' }, 'url'],
        [{ events: ['nope'] }, 'events[0]'],
        [{ status: 'paused' }, 'status'],
      ] as const) {
        const res = await api('put', `/webhooks/${made.id}`).send({ ...base, ...change });
        expectProblem(res, 400);
        expect(Object.keys(res.body.errors)).toEqual([field]);
      }
      expect((await api('get', `/webhooks/${made.id}`).expect(200)).body).toEqual(shown);
    });
  });

  describe('event types and ping', () => {
    it('GET /webhooks/event-types is a plain array of the event types', async () => {
      const res = await api('get', '/webhooks/event-types').expect(200);
      expect(res.body).toEqual([...EVENT_TYPES]);
    });

    it('GET /ping answers 200 to any valid key, 401 without one', async () => {
      const [pub, pvt] = await Promise.all([
        newApplication(t, mgmt, { type: 'public', permissions: ['token:create'] }),
        newApplication(t, mgmt, { type: 'private', permissions: [] }),
      ]);
      for (const key of [mgmt, pub.key, pvt.key]) await api('get', '/ping', key).expect(200);
      expectProblem(await request(t.http).get('/ping'), 401);
      expectProblem(await api('get', '/ping', 'key_nope'), 401);
    });
  });

  describe('permissions', () => {
    let made: { id: string };
    let keys: Record<string, string>;

    beforeAll(async () => {
      made = await create();
      const apps = await Promise.all([
        newApplication(t, mgmt, { type: 'public', permissions: permissionsFor('public') }),
        newApplication(t, mgmt, { type: 'private', permissions: permissionsFor('private') }),
        ...['webhook:create', 'webhook:read', 'webhook:update', 'webhook:delete'].map((p) =>
          newApplication(t, mgmt, {
            type: 'management',
            permissions: permissionsFor('management').filter((q) => q !== p),
          }),
        ),
      ]);
      keys = {
        public: apps[0].key,
        private: apps[1].key,
        'webhook:create': apps[2].key,
        'webhook:read': apps[3].key,
        'webhook:update': apps[4].key,
        'webhook:delete': apps[5].key,
      };
    });

    const routes = (id: string, deliveryId: string) =>
      [
        ['post', '/webhooks', 'webhook:create', { name: 'x', url: URL_OK, events: ['token:created'] }],
        ['get', '/webhooks', 'webhook:read', undefined],
        ['get', '/webhooks/event-types', 'webhook:read', undefined],
        ['get', `/webhooks/${id}`, 'webhook:read', undefined],
        ['put', `/webhooks/${id}`, 'webhook:update', { name: 'x', url: URL_OK, events: ['token:created'] }],
        ['get', `/webhooks/${id}/deliveries`, 'webhook:read', undefined],
        ['post', `/webhooks/${id}/deliveries/${deliveryId}/retry`, 'webhook:update', undefined],
        ['delete', `/webhooks/${id}`, 'webhook:delete', undefined],
      ] as const;

    it('public and private keys, and management keys without the permission, are refused (403)', async () => {
      const [delivery] = await deliveries(tenant.tenantId, made.id, [{ status: 'failed' }]);
      for (const [method, path, permission, body] of routes(made.id, delivery.id)) {
        for (const caller of ['public', 'private', permission]) {
          const res = await api(method, path, keys[caller]).send(body);
          expect({ route: `${method} ${path}`, caller, status: res.status }).toEqual({
            route: `${method} ${path}`,
            caller,
            status: 403,
          });
          expectProblem(res, 403);
        }
      }
      await api('get', `/webhooks/${made.id}`).expect(200);
    });

    it('another tenant can neither see nor touch a webhook (404), and its list shows nothing', async () => {
      const [delivery] = await deliveries(tenant.tenantId, made.id, [{ status: 'failed' }]);
      const before = (await api('get', `/webhooks/${made.id}`).expect(200)).body;
      for (const [method, path, , body] of routes(made.id, delivery.id)) {
        if (!path.includes(made.id)) continue;
        const res = await api(method, path, other.managementKey).send(body);
        expectProblem(res, 404);
        expect(res.text).not.toContain(made.id);
      }
      const list = await api('get', '/webhooks', other.managementKey).expect(200);
      expect(list.body.data).toEqual([]);
      expect((await api('get', `/webhooks/${made.id}`).expect(200)).body).toEqual(before);
      const [row]: { status: string }[] = await db.query(
        `SELECT status FROM webhook_deliveries WHERE tenant_id = $1 AND id = $2`,
        [tenant.tenantId, delivery.id],
      );
      expect(row.status).toBe('failed');
    });
  });

  describe('deliveries', () => {
    it('lists deliveries newest first in the offset shape', async () => {
      const made = await create();
      const rows = await deliveries(tenant.tenantId, made.id, [
        { status: 'succeeded', attempts: 1, lastStatusCode: 200 },
        { status: 'failed', attempts: 7, lastStatusCode: 503 },
        {
          status: 'pending',
          attempts: 0,
          lastStatusCode: null,
          nextAttemptAt: new Date(Date.now() + 60_000),
        },
      ]);
      const res = await api('get', `/webhooks/${made.id}/deliveries`).expect(200);
      expect(res.body.pagination).toEqual({ total_items: 3, page_number: 1, page_size: 20, total_pages: 1 });
      expect(res.body.data).toEqual(
        [...rows].reverse().map((r) => ({
          id: r.id,
          event_id: r.eventId,
          event_type: 'token:created',
          status: r.status,
          attempts: r.attempts,
          last_status_code: r.lastStatusCode,
          next_attempt_at: r.nextAttemptAt.toISOString(),
          created_at: r.createdAt.toISOString(),
        })),
      );
      const page2 = await api('get', `/webhooks/${made.id}/deliveries`)
        .query({ page: 2, size: 2 })
        .expect(200);
      expect(page2.body.pagination).toEqual({ total_items: 3, page_number: 2, page_size: 2, total_pages: 2 });
      expect(page2.body.data.map((d: { id: string }) => d.id)).toEqual([rows[0].id]);
      const past = await api('get', `/webhooks/${made.id}/deliveries`)
        .query({ page: 3, size: 2 })
        .expect(200);
      expect(past.body.data).toEqual([]);
      expectProblem(await api('get', `/webhooks/${made.id}/deliveries`).query({ size: 101 }), 400);
    });

    it('retry makes a delivery pending and due now, drops its lease, and nudges the worker after commit', async () => {
      const made = await create();
      const [failed, leased] = await deliveries(tenant.tenantId, made.id, [
        { status: 'failed', attempts: 7, lastStatusCode: 500 },
        { status: 'pending', attempts: 2, lastStatusCode: 502, leasedUntil: new Date(Date.now() + 60_000) },
      ]);
      const nudge = t.app.get(DeliveryNudge);
      const poked: string[] = [];
      const spy = jest.spyOn(nudge, 'poke').mockImplementation(function (this: DeliveryNudge) {
        poked.push('poke');
      });
      try {
        for (const target of [failed, leased]) {
          const before = Date.now();
          const res = await api('post', `/webhooks/${made.id}/deliveries/${target.id}/retry`).expect(200);
          expect(res.body).toEqual({
            id: target.id,
            event_id: target.eventId,
            event_type: 'token:created',
            status: 'pending',
            attempts: target.attempts,
            last_status_code: target.lastStatusCode,
            next_attempt_at: expect.stringMatching(ISO),
            created_at: target.createdAt.toISOString(),
          });
          const due = Date.parse(res.body.next_attempt_at);
          expect(due).toBeGreaterThanOrEqual(before - 5);
          expect(due).toBeLessThanOrEqual(Date.now() + 5);
          const [row]: { leased_until: Date | null; status: string }[] = await db.query(
            `SELECT leased_until, status FROM webhook_deliveries WHERE tenant_id = $1 AND id = $2`,
            [tenant.tenantId, target.id],
          );
          expect(row.leased_until).toBeNull();
        }
        expect(poked).toEqual(['poke', 'poke']);

        // Another webhook's delivery, an unknown one, and a malformed id: 404, and no nudge.
        const sibling = await create();
        expectProblem(await api('post', `/webhooks/${sibling.id}/deliveries/${failed.id}/retry`), 404);
        expectProblem(await api('post', `/webhooks/${made.id}/deliveries/${randomUUID()}/retry`), 404);
        expectProblem(await api('post', `/webhooks/${made.id}/deliveries/nope/retry`), 404);
        expect(poked).toHaveLength(2);
      } finally {
        spy.mockRestore();
      }
      const audit: { message: string }[] = await db.query(
        `SELECT message FROM audit_logs WHERE tenant_id = $1 AND entity_type = 'webhook'
            AND entity_id = $2 AND operation = 'update'`,
        [tenant.tenantId, made.id],
      );
      expect(audit.map((a) => a.message).sort()).toEqual(
        [`Webhook delivery ${failed.id} retried`, `Webhook delivery ${leased.id} retried`].sort(),
      );
    });
  });
});
