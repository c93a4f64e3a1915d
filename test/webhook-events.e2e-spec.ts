import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { EVENT_TYPES, EventOutbox } from '../src/common/events/event-outbox';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import {
  newConnection,
  ORCHESTRATION_PERMISSIONS,
  sandboxFields,
  settleOwn,
  waitForConnection,
} from './support/orchestration';
import { statementsDuring } from './support/statements';
import { waitFor } from './support/wait';

/**
 * The transactional outbox's emission points (docs/webhooks.md): every change records its events in
 * its own database transaction, `data` the entity as the API answers it (masked). The webhooks here are
 * rows inserted directly (their secret is irrelevant); what is asserted is `webhook_events` and
 * `webhook_deliveries`. No scheduled jobs: the settlement job is run by hand.
 *
 * This app runs no jobs, but the other test files' apps do, on the same database and across tenants:
 * their audit checkpointer signs a checkpoint of every tenant whose audit log grew, and reports it
 * (`audit:checkpoint`) at a moment of its own, between any two requests here. The webhooks here are
 * therefore subscribed to every type but that one (CHANGE_EVENTS): what they get is exactly the events
 * of the changes the tests make. Checkpoints' events are tested in audit-tree.e2e-spec.ts.
 */

interface Event {
  type: string;
  entity_id: string;
  data: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Every event type a change reports, all but the checkpointer's (see above). */
const CHANGE_EVENTS = EVENT_TYPES.filter((type) => type !== 'audit:checkpoint');

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '317' };

describe('webhook events (the outbox)', () => {
  let t: TestApp;
  let db: DataSource;

  beforeAll(async () => {
    t = await startApp({ JOBS_ENABLED: 'false' });
    db = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  /** A webhook row of the tenant, as the CRUD API would have made it. */
  const hook = async (tenantId: string, events: readonly string[] = CHANGE_EVENTS, status = 'enabled') => {
    const id = randomUUID();
    await db.query(
      `INSERT INTO webhooks (tenant_id, id, name, url, events, status, secret, created_at)
       VALUES ($1, $2, 'test hook', 'https://receiver.example/hook', $3::text[], $4, '\\x00'::bytea, now())`,
      [tenantId, id, events, status],
    );
    return id;
  };

  /** The events a webhook was given, in the order of its deliveries. */
  const eventsOf = async (tenantId: string, webhookId: string): Promise<Event[]> =>
    db.query(
      `SELECT e.type, e.entity_id, e.data FROM webhook_deliveries d
         JOIN webhook_events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
        WHERE d.tenant_id = $1 AND d.webhook_id = $2 ORDER BY d.seq`,
      [tenantId, webhookId],
    );
  const eventCount = async (tenantId: string): Promise<number> =>
    (await db.query('SELECT count(*)::int AS n FROM webhook_events WHERE tenant_id = $1', [tenantId]))[0].n;

  /** A tenant with a webhook subscribed to every event and a private key for tokens and payments. */
  async function subscribedTenant(events: readonly string[] = CHANGE_EVENTS) {
    const tenant = await newTenant(t);
    const webhookId = await hook(tenant.tenantId, events);
    const app = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: [...ORCHESTRATION_PERMISSIONS, 'token:update', 'token:delete'],
    });
    let seen = 0;
    return {
      tenant,
      webhookId,
      key: app.key,
      app,
      all: () => eventsOf(tenant.tenantId, webhookId),
      /** The events recorded since the previous call. */
      fresh: async () => {
        const all = await eventsOf(tenant.tenantId, webhookId);
        const out = all.slice(seen);
        seen = all.length;
        return out;
      },
    };
  }

  const api = (key: string) => ({
    get: (path: string) => request(t.http).get(path).set('BT-API-KEY', key),
    post: (path: string, body: object = {}) => request(t.http).post(path).set('BT-API-KEY', key).send(body),
    patch: (path: string, body: object) => request(t.http).patch(path).set('BT-API-KEY', key).send(body),
    put: (path: string, body: object) => request(t.http).put(path).set('BT-API-KEY', key).send(body),
    delete: (path: string) => request(t.http).delete(path).set('BT-API-KEY', key),
  });

  it('tokens: created (masked, as GET shows it), updated, deleted; a deduplicated answer makes none', async () => {
    const s = await subscribedTenant();
    await s.fresh();
    const a = api(s.key);
    const created = (
      await a
        .post('/tokens', { type: 'card', data: CARD, deduplicate_token: true, metadata: { m: '1' } })
        .expect(201)
    ).body;
    let [event, ...rest] = await s.fresh();
    expect(rest).toEqual([]);
    expect(event).toMatchObject({ type: 'token:created', entity_id: created.id });
    expect(event.data).toEqual((await a.get(`/tokens/${created.id}`).expect(200)).body);
    expect(event.data.mask).toEqual({
      number: 'XXXXXXXXXXXX4242',
      expiration_month: 12,
      expiration_year: 2030,
    });
    expect(event.data.data).toBeUndefined();

    // The same card again, deduplicated: the existing token answers, nothing is created.
    const again = (
      await a
        .post('/tokens', { type: 'card', data: CARD, deduplicate_token: true, metadata: { m: '1' } })
        .expect(201)
    ).body;
    expect(again.id).toBe(created.id);
    expect(await s.fresh()).toEqual([]);

    await a.patch(`/tokens/${created.id}`, { metadata: { m: '2' } }).expect(200);
    [event, ...rest] = await s.fresh();
    expect(rest).toEqual([]);
    expect(event).toMatchObject({
      type: 'token:updated',
      entity_id: created.id,
      data: { metadata: { m: '2' } },
    });
    expect(event.data).toEqual((await a.get(`/tokens/${created.id}`).expect(200)).body);

    const before = (await a.get(`/tokens/${created.id}`).expect(200)).body;
    await a.delete(`/tokens/${created.id}`).expect(204);
    [event, ...rest] = await s.fresh();
    expect(rest).toEqual([]);
    expect(event).toEqual({ type: 'token:deleted', entity_id: created.id, data: before });

    // Tokenize of several shapes: one event per token made, in one record.
    const res = await a
      .post('/tokenize', {
        first: { type: 'card', data: CARD },
        second: { type: 'token', data: 'plain-secret-Zx9' },
      })
      .expect(201);
    const events = await s.fresh();
    expect(events.map((e) => [e.type, e.entity_id])).toEqual([
      ['token:created', res.body.first.id],
      ['token:created', res.body.second.id],
    ]);
    expect(JSON.stringify(events)).not.toContain('plain-secret-Zx9');
  });

  it('a 100-card tokenize records 100 token:created events in one statement', async () => {
    const s = await subscribedTenant();
    await s.fresh();
    const cards = Array.from({ length: 100 }, (_, i) => ({
      type: 'card',
      data: { ...CARD, number: i % 2 ? '4242424242424242' : '5555555555554444' },
    }));
    let res: request.Response | undefined;
    const statements = await statementsDuring(async () => {
      res = await api(s.key).post('/tokenize', cards).expect(201);
    });
    expect(statements.filter((sql) => sql.includes('webhook_events'))).toHaveLength(1);
    const events = await s.fresh();
    expect(events).toHaveLength(100);
    expect(events.map((e) => e.entity_id)).toEqual(res!.body.map((x: { id: string }) => x.id));
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(['token:created']));
    const deliveries = await db.query(
      `SELECT count(*)::int AS n FROM webhook_deliveries
        WHERE tenant_id = $1 AND webhook_id = $2 AND event_type = 'token:created'`,
      [s.tenant.tenantId, s.webhookId],
    );
    expect(deliveries[0].n).toBe(100);
  });

  it('a refused change records nothing: a bad element among many (400), a container not granted (403), a bad PATCH', async () => {
    const s = await subscribedTenant();
    const a = api(s.key);
    const token = (await a.post('/tokens', { type: 'card', data: CARD }).expect(201)).body.id;
    await s.fresh();
    const cards = Array.from({ length: 20 }, () => ({ type: 'card', data: CARD }));
    cards[13] = { type: 'card', data: { ...CARD, number: '4242424242424241' } };
    expectProblem(await a.post('/tokenize', cards), 400);
    const narrow = await newApplication(t, s.tenant.managementKey, {
      type: 'private',
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'], transform: 'mask' }],
    });
    expectProblem(
      await api(narrow.key).post('/tokens', { type: 'card', data: CARD, containers: ['/pci/'] }),
      403,
    );
    expectProblem(await a.patch(`/tokens/${token}`, { expires_at: 'not a date' }), 400);
    expectProblem(await api(narrow.key).delete(`/tokens/${token}`), 403);
    // Only the narrow application's own creation was recorded.
    expect((await s.fresh()).map((e) => [e.type, e.entity_id])).toEqual([['application:created', narrow.id]]);
  });

  it('a change rolled back after its events were recorded leaves none', async () => {
    const s = await subscribedTenant();
    await s.fresh();
    // The audit rows are written after the handler, in the change's transaction: failing them rolls
    // back the tokens and the events recorded before.
    const fn = `fail_audit_${s.tenant.tenantId.replace(/-/g, '')}`;
    await db.query(
      `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'forced'; END $$`,
    );
    await db.query(
      `CREATE TRIGGER ${fn} BEFORE INSERT ON audit_logs FOR EACH ROW
        WHEN (NEW.tenant_id = '${s.tenant.tenantId}') EXECUTE FUNCTION ${fn}()`,
    );
    try {
      const res = await api(s.key).post('/tokenize', [
        { type: 'card', data: CARD },
        { type: 'token', data: 'x' },
      ]);
      expect(res.status).toBe(500);
    } finally {
      await db.query(`DROP TRIGGER ${fn} ON audit_logs`);
      await db.query(`DROP FUNCTION ${fn}()`);
    }
    expect(await s.fresh()).toEqual([]);
    const tokens = await db.query('SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1', [
      s.tenant.tenantId,
    ]);
    expect(tokens[0].n).toBe(0);
  });

  describe('transactions: one event per committed change, created then updated at each status', () => {
    let s: Awaited<ReturnType<typeof subscribedTenant>>;
    let stripe: string;

    beforeAll(async () => {
      s = await subscribedTenant();
      stripe = (await newConnection(t, s.key, { currencies: ['USD'], countries: ['US'] })).id;
    });

    const pay = async (number: string, body: Record<string, unknown> = {}) => {
      const a = api(s.key);
      const token = (await a.post('/tokens', { type: 'card', data: { ...CARD, number } }).expect(201)).body
        .id;
      await s.fresh();
      const res = await a.post('/orchestration/transactions', {
        amount: 1500,
        currency: 'USD',
        connection_id: stripe,
        token,
        ...body,
      });
      expect({ status: res.status, body: res.status === 201 ? 'ok' : res.body }).toEqual({
        status: 201,
        body: 'ok',
      });
      return res.body as { id: string; status: string; payment_method: { approval_url: string | null } };
    };
    const statuses = async (id: string) =>
      (await s.fresh()).map((e) => {
        expect(e.entity_id).toBe(id);
        return [e.type, e.data.status, e.data.refunded_amount];
      });
    const current = async (id: string) =>
      (await api(s.key).get(`/orchestration/transactions/${id}`).expect(200)).body;

    it('authorize, capture, refund; the last event is the transaction as GET answers it', async () => {
      const tx = await pay('4242424242424242');
      expect(await statuses(tx.id)).toEqual([
        ['transaction:created', 'processing', 0],
        ['transaction:updated', 'authorization_succeeded', 0],
      ]);
      await api(s.key).post(`/orchestration/transactions/${tx.id}/capture`).expect(200);
      expect(await statuses(tx.id)).toEqual([
        ['transaction:updated', 'processing', 0],
        ['transaction:updated', 'capture_succeeded', 0],
      ]);
      await api(s.key).post(`/orchestration/transactions/${tx.id}/refunds`, { amount: 500 }).expect(201);
      const [refunded] = await s.fresh();
      expect(refunded).toMatchObject({
        type: 'transaction:updated',
        data: { status: 'capture_succeeded', refunded_amount: 500 },
      });
      expect(refunded.data).toEqual(await current(tx.id));
      const text = JSON.stringify(await s.all());
      for (const secret of ['4242424242424242', '"317"', s.key]) expect(text).not.toContain(secret);
    });

    it('void, then a refused capture (409) records nothing; a decline is created and updated', async () => {
      const tx = await pay('4242424242424242');
      await s.fresh();
      await api(s.key).post(`/orchestration/transactions/${tx.id}/void`).expect(200);
      expect(await statuses(tx.id)).toEqual([
        ['transaction:updated', 'processing', 0],
        ['transaction:updated', 'authorization_voided', 0],
      ]);
      expectProblem(await api(s.key).post(`/orchestration/transactions/${tx.id}/capture`), 409);
      expectProblem(
        await api(s.key).post(`/orchestration/transactions/${tx.id}/capture`, { amount: -1 }),
        400,
      );
      expect(await s.fresh()).toEqual([]);

      const declined = await pay('4000000000000002');
      expect(await statuses(declined.id)).toEqual([
        ['transaction:created', 'processing', 0],
        ['transaction:updated', 'authorization_declined', 0],
      ]);
    });

    it('an asynchronous capture: capture_pending, then the settlement job settles it', async () => {
      const tx = await pay('4000000000000259');
      await s.fresh();
      await api(s.key).post(`/orchestration/transactions/${tx.id}/capture`).expect(200);
      expect(await statuses(tx.id)).toEqual([
        ['transaction:updated', 'processing', 0],
        ['transaction:updated', 'capture_pending', 0],
      ]);
      // The sandbox settles a capture some time after it is asked (SANDBOX_ASYNC_MS, on the wall clock).
      await waitFor(
        async () => {
          await settleOwn(t);
          return (await current(tx.id)).status !== 'capture_pending';
        },
        { intervalMs: 200, what: 'the capture to settle' },
      );
      const [settled, ...rest] = await s.fresh();
      expect(rest).toEqual([]);
      expect(settled).toMatchObject({ type: 'transaction:updated', data: { status: 'capture_succeeded' } });
      expect(settled.data).toEqual(await current(tx.id));
    });

    it('buyer approval: approved on the page, or expired by the job; the event never holds the link', async () => {
      const tx = await pay('4000000000003220');
      expect(tx.status).toBe('buyer_approval_pending');
      const events = await s.fresh();
      expect(events.map((e) => e.data.status)).toEqual(['processing', 'buyer_approval_pending']);
      expect(events[1].data.payment_method.approval_url).toBeNull();
      expect(events[1].data.approval_expires_at).toEqual(expect.any(String));
      const link = tx.payment_method.approval_url!;
      expect(JSON.stringify(await s.all())).not.toContain(new URL(link).pathname.split('/').pop());
      await request(t.http)
        .post(`${new URL(link).pathname}/approve`)
        .expect(200);
      expect(await statuses(tx.id)).toEqual([
        ['transaction:updated', 'processing', 0],
        ['transaction:updated', 'authorization_succeeded', 0],
      ]);

      const expiring = await pay('4000000000003220');
      await s.fresh();
      await db.query(
        `UPDATE transactions SET approval_expires_at = now() - interval '1 minute' WHERE tenant_id = $1 AND id = $2`,
        [s.tenant.tenantId, expiring.id],
      );
      await settleOwn(t);
      const [expired, ...rest] = await s.fresh();
      expect(rest).toEqual([]);
      expect(expired).toMatchObject({
        type: 'transaction:updated',
        entity_id: expiring.id,
        data: { status: 'authorization_failed', error_code: 'approval_expired' },
      });
      expect(expired.data).toEqual(await current(expiring.id));
    });
  });

  it('connections: connection:updated on each status change, secrets shown as ********', async () => {
    const s = await subscribedTenant(['connection:updated']);
    const a = api(s.key);
    const created = await newConnection(t, s.key, { secret: 'sk_test_hidden_Qw7' });
    let events = await s.fresh();
    expect(events.map((e) => [e.type, e.entity_id, e.data.status])).toEqual([
      ['connection:updated', created.id, 'available'],
    ]);
    expect(events[0].data).toEqual(
      (await a.get(`/orchestration/connections/${created.id}`).expect(200)).body,
    );

    const current = (await a.get(`/orchestration/connections/${created.id}`).expect(200)).body;
    const formulas = (await a.get('/orchestration/connection_formulas').expect(200)).body;
    const formula = formulas.find((f: { id: string }) => f.id === current.connection_formula_id);
    const body = {
      connection_formula_id: current.connection_formula_id,
      method: 'card',
      display_name: 'renamed',
      fields: sandboxFields(formula, 'sk_test_invalid_Rt4'),
      accepted_countries: current.accepted_countries,
      accepted_currencies: current.accepted_currencies,
    };
    expectProblem(
      await a.put(`/orchestration/connections/${created.id}`, { ...body, display_name: '' }),
      400,
    );
    await a.put(`/orchestration/connections/${created.id}`, body).expect(200);
    expect(await waitForConnection(t, s.key, created.id)).toBe('failed');
    events = await s.fresh();
    expect(events.map((e) => [e.type, e.data.status, e.data.display_name])).toEqual([
      ['connection:updated', 'pending', 'renamed'],
      ['connection:updated', 'failed', 'renamed'],
    ]);
    const text = JSON.stringify(await s.all());
    expect(text).not.toContain('sk_test_hidden_Qw7');
    expect(text).not.toContain('sk_test_invalid_Rt4');
    expect(text).toContain('********');
  });

  it('applications: created, updated (also by a key added or deleted), deleted; never a clear key', async () => {
    const s = await subscribedTenant(['application:created', 'application:updated', 'application:deleted']);
    const m = api(s.tenant.managementKey);
    expect((await s.fresh()).map((e) => [e.type, e.entity_id])).toEqual([['application:created', s.app.id]]);

    const app = await newApplication(t, s.tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    let [event] = await s.fresh();
    expect(event).toMatchObject({ type: 'application:created', entity_id: app.id });
    expect(event.data).toEqual((await m.get(`/applications/${app.id}`).expect(200)).body);
    expect(event.data.key).toBeUndefined();

    await m
      .put(`/applications/${app.id}`, { name: 'renamed', permissions: ['token:read', 'token:create'] })
      .expect(200);
    [event] = await s.fresh();
    expect(event).toMatchObject({ type: 'application:updated', data: { name: 'renamed' } });
    expect(event.data).toEqual((await m.get(`/applications/${app.id}`).expect(200)).body);

    const added = (await m.post(`/applications/${app.id}/keys`).expect(201)).body;
    [event] = await s.fresh();
    expect(event.type).toBe('application:updated');
    expect(event.data).toEqual((await m.get(`/applications/${app.id}`).expect(200)).body);
    expect(event.data.keys.map((k: { id: string }) => k.id)).toEqual([
      (app.body.keys as { id: string }[])[0].id,
      added.id,
    ]);

    await m.delete(`/applications/${app.id}/keys/${added.id}`).expect(204);
    [event] = await s.fresh();
    expect(event.type).toBe('application:updated');
    expect(event.data).toEqual((await m.get(`/applications/${app.id}`).expect(200)).body);

    expectProblem(await m.put(`/applications/${app.id}`, { name: 'x', permissions: ['no:such'] }), 400);
    expectProblem(await api(app.key).put(`/applications/${app.id}`, { name: 'x' }), 403);
    const before = (await m.get(`/applications/${app.id}`).expect(200)).body;
    await m.delete(`/applications/${app.id}`).expect(204);
    const events = await s.fresh();
    expect(events).toEqual([{ type: 'application:deleted', entity_id: app.id, data: before }]);
    // The application and its keys are gone.
    const left = await db.query(
      'SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND application_id = $2',
      [s.tenant.tenantId, app.id],
    );
    expect(left[0].n).toBe(0);

    const text = JSON.stringify(await s.all());
    for (const key of [s.tenant.managementKey, s.key, app.key, added.key]) expect(text).not.toContain(key);
  });

  it("a new tenant's management application is reported as created (no webhook can exist yet: not kept)", async () => {
    const outbox = t.app.get(EventOutbox);
    // The tenant's change records its events as it ends (`record(change, events)`).
    const spy = jest.spyOn(outbox, 'record');
    let tenant: TestTenant;
    let calls: unknown[][];
    try {
      tenant = await newTenant(t);
      calls = spy.mock.calls.map(([, events]) => events);
    } finally {
      spy.mockRestore();
    }
    expect(calls).toEqual([
      [
        {
          tenantId: tenant.tenantId,
          type: 'application:created',
          entityId: tenant.managementApplicationId,
          data: expect.objectContaining({ id: tenant.managementApplicationId, keys: [expect.any(Object)] }),
        },
      ],
    ]);
    expect(JSON.stringify(calls)).not.toContain(tenant.managementKey);
    expect(await eventCount(tenant.tenantId)).toBe(0);
  });

  it('only enabled webhooks subscribed to the type get events, and only of their own tenant', async () => {
    const a = await subscribedTenant();
    const b = await subscribedTenant();
    const second = await hook(a.tenant.tenantId, ['token:created']);
    const none = await newTenant(t);
    const disabled = await newTenant(t);
    await hook(disabled.tenantId, EVENT_TYPES, 'disabled');
    const elsewhere = await newTenant(t);
    await hook(elsewhere.tenantId, ['transaction:created', 'token:deleted']);
    const before = {
      a: (await a.all()).length,
      b: (await b.all()).length,
    };

    const tokenize = async (tenant: TestTenant) => {
      const app = await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create'],
      });
      await api(app.key)
        .post('/tokenize', [
          { type: 'card', data: CARD },
          { type: 'token', data: 'y' },
        ])
        .expect(201);
    };
    await api(a.key)
      .post('/tokenize', [
        { type: 'card', data: CARD },
        { type: 'token', data: 'y' },
      ])
      .expect(201);
    for (const tenant of [none, disabled, elsewhere]) await tokenize(tenant);

    expect((await a.all()).length - before.a).toBe(2);
    // One event, one delivery per subscribed webhook.
    expect((await eventsOf(a.tenant.tenantId, second)).map((e) => e.type)).toEqual([
      'token:created',
      'token:created',
    ]);
    expect(await eventCount(a.tenant.tenantId)).toBe(before.a + 2);
    expect((await b.all()).length).toBe(before.b);
    const crossed = await db.query(
      `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id
        WHERE w.id = $1 AND d.tenant_id <> $2`,
      [b.webhookId, b.tenant.tenantId],
    );
    expect(crossed[0].n).toBe(0);
    for (const tenant of [none, disabled, elsewhere]) expect(await eventCount(tenant.tenantId)).toBe(0);
  });
});
