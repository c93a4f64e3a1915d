import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import supertest from 'supertest';
import { DataSource } from 'typeorm';
import { TenantKeysService } from '../src/common/crypto/tenant-keys.service';
import { EventOutbox } from '../src/common/events/event-outbox';
import { WebhookDeliveryWorker } from '../src/modules/webhooks/delivery/webhook-delivery.worker';
import { newTenant, startApp, TestApp } from './support/app';
import { createDatabase, dropDatabase } from './support/test-database';
import { Clock } from '../src/common/jobs/clock';
import { createWebhookRow, inTransaction, payload, Receiver, recordEvents } from './support/webhooks';
import { waitFor } from './support/wait';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One round of the worker with the service's clock moved on by `ms` (a retry delay passed), its sends
 * awaited, and the clock put back: whatever would be due by then has been sent once it returns. (The
 * database is shared by the file's tests: the count it answers may include other tests' retries.)
 */
async function roundAfter(t: TestApp, ms: number): Promise<number> {
  const clock = t.app.get(Clock);
  clock.advance(ms);
  try {
    return await t.app.get(WebhookDeliveryWorker).deliverDue();
  } finally {
    clock.reset();
  }
}

/**
 * Delivery of webhook events (docs/webhooks.md) to a local receiver. The file has a database of its
 * own: the workers of other test files' servers would otherwise claim these deliveries too.
 */
describe('webhook delivery', () => {
  let database: { name: string; url: string };
  let t: TestApp;
  let db: DataSource;
  let receiver: Receiver;
  let closed = false;
  const env = {
    OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    WEBHOOK_RETRY_SECONDS: '1,1,1,1',
    WEBHOOK_POLL_MS: '100',
    WEBHOOK_DELIVERY_ENABLED: 'true',
  };

  beforeAll(async () => {
    database = await createDatabase('vault_test_webhooks');
    receiver = await new Receiver().start();
    t = await startApp({ ...env, DATABASE_URL: database.url });
    // Nest's Logger buffers until the app listens, which tests never do: its lines are wanted here.
    t.app.flushLogs();
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    if (!closed) await t?.close();
    await receiver?.stop();
    if (database) await dropDatabase(database.name);
  });

  const webhook = async (
    tenantId: string,
    url: string,
    events: string[] = ['token:created'],
    status: 'enabled' | 'disabled' = 'enabled',
  ) => createWebhookRow(db, t.app.get(TenantKeysService), tenantId, { url, events, status });

  const event = (
    tenantId: string,
    entityId: string = randomUUID(),
    type: 'token:created' | 'token:updated' = 'token:created',
    extra = {},
  ) => ({
    tenantId,
    type,
    entityId,
    data: { id: entityId, type: 'token', ...extra },
  });

  const deliveriesOf = (webhookId: string) =>
    db.query<
      {
        event_id: string;
        status: string;
        attempts: number;
        last_status_code: number | null;
        leased_until: Date | null;
        next_attempt_at: Date | null;
      }[]
    >(
      `SELECT event_id, status, attempts, last_status_code, leased_until, next_attempt_at
         FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq`,
      [webhookId],
    );
  const webhookRow = async (id: string) =>
    (
      await db.query<{ status: string; consecutive_failures: number }[]>(
        'SELECT status, consecutive_failures FROM webhooks WHERE id = $1',
        [id],
      )
    )[0];
  const waitForDeliveries = async (
    webhookId: string,
    check: (rows: Awaited<ReturnType<typeof deliveriesOf>>) => boolean,
    timeoutMs = 10_000,
  ) =>
    waitFor(
      async () => {
        const rows = await deliveriesOf(webhookId);
        return check(rows) && rows;
      },
      { timeoutMs, intervalMs: 50, what: `the deliveries of ${webhookId}` },
    );

  it('posts {id, type, tenant_id, created_at, data} signed per Standard Webhooks; a success ends the failure streak', async () => {
    const tenant = await newTenant(t);
    const url = receiver.hook();
    const hook = await webhook(tenant.tenantId, url);
    await db.query('UPDATE webhooks SET consecutive_failures = 42 WHERE id = $1', [hook.id]);
    const sent = event(tenant.tenantId, randomUUID(), 'token:created', { mask: '{{ data }}' });
    await recordEvents(t, sent);
    await receiver.waitFor(() => receiver.to(url).length === 1);

    const [request] = receiver.to(url);
    const [stored] = await db.query<{ id: string; created_at: Date }[]>(
      'SELECT id, created_at FROM webhook_events WHERE tenant_id = $1',
      [tenant.tenantId],
    );
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['webhook-id']).toBe(stored.id);
    expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(JSON.parse(request.body)).toEqual({
      id: stored.id,
      type: 'token:created',
      tenant_id: tenant.tenantId,
      created_at: stored.created_at.toISOString(),
      data: sent.data,
    });
    // Any receiver verifies it with the standardwebhooks package; another secret or a changed body fails.
    const headers = request.headers as Record<string, string>;
    expect(new Webhook(hook.secret).verify(request.body, headers)).toEqual(JSON.parse(request.body));
    const other = new Webhook(Buffer.alloc(32, 7).toString('base64'));
    expect(() => other.verify(request.body, headers)).toThrow();
    expect(() => new Webhook(hook.secret).verify(request.body.replace('token', 'tokem'), headers)).toThrow();

    const rows = await waitForDeliveries(hook.id, (r) => r[0]?.status === 'succeeded');
    // A delivered event has no next attempt, in the row and in the API's answer.
    expect(rows).toEqual([
      {
        event_id: stored.id,
        status: 'succeeded',
        attempts: 1,
        last_status_code: 200,
        leased_until: null,
        next_attempt_at: null,
      },
    ]);
    const listed = await supertest(t.http)
      .get(`/webhooks/${hook.id}/deliveries`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(listed.body.data).toEqual([
      expect.objectContaining({ status: 'succeeded', attempts: 1, next_attempt_at: null }),
    ]);
    expect(await webhookRow(hook.id)).toEqual({ status: 'enabled', consecutive_failures: 0 });
    // The log lines name the attempt, never the body or the secret.
    const logs = t.logs.join('\n');
    expect(logs).not.toContain(hook.secret.slice(6));
    expect(logs).not.toContain('{{ data }}');
  });

  it('retries 3xx, 4xx, 5xx and a closed connection until a 2xx, with the same webhook-id, counting attempts', async () => {
    const tenant = await newTenant(t);
    const answers = [302, 404, 503, 'close', 200] as const;
    const url = receiver.hook((_, n) => answers[n - 1] ?? 200);
    const hook = await webhook(tenant.tenantId, url);
    await recordEvents(t, event(tenant.tenantId));
    const rows = await waitForDeliveries(hook.id, (r) => r[0]?.status === 'succeeded', 15_000);

    const requests = receiver.to(url);
    expect(requests).toHaveLength(5);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([rows[0].event_id]));
    for (const r of requests)
      expect(new Webhook(hook.secret).verify(r.body, r.headers as Record<string, string>)).toBeTruthy();
    // Each retry waits its delay of WEBHOOK_RETRY_SECONDS (1 s here).
    for (let i = 1; i < requests.length; i++)
      expect(requests[i].at - requests[i - 1].at).toBeGreaterThanOrEqual(900);
    expect(rows).toEqual([
      expect.objectContaining({ status: 'succeeded', attempts: 5, last_status_code: 200 }),
    ]);
    // Each failed attempt is logged with its webhook, delivery and status code (none for the dropped
    // connection), never the body or the secret.
    const lines = t.logs.filter((line) => line.includes(hook.id));
    for (const code of ['302', '404', '503', 'null'])
      expect(lines.some((line) => line.includes(`"status_code":${code}`))).toBe(true);
    expect(lines.some((line) => line.includes('"failure":"unreachable"'))).toBe(true);
    expect(lines.join('\n')).not.toContain(requests[0].body);
    expect(lines.join('\n')).not.toContain(hook.secret.slice(6));
  });

  it('a delivery whose attempts run out is failed, with the last status code (null without an answer)', async () => {
    const tenant = await newTenant(t);
    const failing = receiver.hook(() => 500);
    const closing = receiver.hook(() => 'close');
    const a = await webhook(tenant.tenantId, failing);
    const b = await webhook(tenant.tenantId, closing);
    await recordEvents(t, event(tenant.tenantId));
    const done = (r: { status: string }[]) => r[0]?.status === 'failed';
    // Failed for good: no attempt is due any more either.
    const ended = { leased_until: null, next_attempt_at: null };
    expect(await waitForDeliveries(a.id, done, 15_000)).toEqual([
      expect.objectContaining({ status: 'failed', attempts: 5, last_status_code: 500, ...ended }),
    ]);
    expect(await waitForDeliveries(b.id, done, 15_000)).toEqual([
      expect.objectContaining({ status: 'failed', attempts: 5, last_status_code: null, ...ended }),
    ]);
    const listed = await supertest(t.http)
      .get(`/webhooks/${a.id}/deliveries`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(listed.body.data).toEqual([expect.objectContaining({ status: 'failed', next_attempt_at: null })]);
    // A second past the last retry delay, nothing more is sent.
    await roundAfter(t, 1_200);
    expect(receiver.to(failing)).toHaveLength(5);
    expect(receiver.to(closing)).toHaveLength(5);
    expect(await webhookRow(a.id)).toEqual({ status: 'enabled', consecutive_failures: 1 });
  });

  it('a destination the outbound policy refuses is a failed attempt without a status code', async () => {
    const tenant = await newTenant(t);
    const hook = await webhook(tenant.tenantId, 'http://169.254.169.254/latest/meta-data');
    await recordEvents(t, event(tenant.tenantId));
    expect(
      await waitForDeliveries(hook.id, (r) => r[0]?.attempts === 1 && r[0].leased_until === null),
    ).toEqual([expect.objectContaining({ status: 'pending', attempts: 1, last_status_code: null })]);
    await receiver.waitFor(
      () =>
        t.logs.some((line) => line.includes(hook.id) && line.includes('"failure":"destination_not_allowed"')),
      2_000,
      'the log line of the refused attempt',
    );
  });

  it('events of one entity recorded concurrently arrive in recording order, while other entities proceed', async () => {
    const tenant = await newTenant(t);
    const slow = 'entity-in-order';
    let released = false;
    let release: () => void = () => undefined;
    const held = new Promise<number>((resolve) => {
      release = () => {
        released = true;
        resolve(200);
      };
    });
    const url = receiver.hook((request) =>
      (payload(request).data as { id: string; n?: number }).n === 0 ? held : 200,
    );
    await webhook(tenant.tenantId, url, ['token:updated']);

    // Changes of one entity are serialized by a lock on it (as a row lock does in the services); the
    // order they take it in is the order they happen.
    let counter = 0;
    const change = () =>
      inTransaction(t, async (c) => {
        await c.query('SELECT pg_advisory_xact_lock(4242, hashtext($1))', [slow]);
        const n = counter++;
        await t.app.get(EventOutbox).record(c, [event(tenant.tenantId, slow, 'token:updated', { n })]);
      });
    const N = 20;
    await Promise.all(Array.from({ length: N }, () => change()));

    // The first event of that entity is held by the receiver; another entity's events arrive meanwhile.
    const others = ['o1', 'o2', 'o3'];
    for (const id of others) await recordEvents(t, event(tenant.tenantId, id, 'token:updated'));
    const ofOthers = () =>
      receiver.to(url).filter((r) => others.includes((payload(r).data as { id: string }).id));
    await receiver.waitFor(() => ofOthers().length === others.length, 5_000, "the other entity's events");
    expect(released).toBe(false);
    release();

    const ofSlow = () => receiver.to(url).filter((r) => (payload(r).data as { id: string }).id === slow);
    await receiver.waitFor(() => ofSlow().length === N, 15_000);
    expect(ofSlow().map((r) => (payload(r).data as { n: number }).n)).toEqual([...Array(N).keys()]);
    // Each was sent once (nothing failed), and never before the previous one had been answered.
    expect(new Set(ofSlow().map((r) => r.headers['webhook-id'])).size).toBe(N);
  });

  it('a disabled webhook receives nothing, whether disabled before the event or after it was recorded', async () => {
    const tenant = await newTenant(t);
    const disabledUrl = receiver.hook();
    const laterUrl = receiver.hook();
    const enabledUrl = receiver.hook();
    await webhook(tenant.tenantId, disabledUrl, ['token:created'], 'disabled');
    const later = await webhook(tenant.tenantId, laterUrl);
    await webhook(tenant.tenantId, enabledUrl);
    // The event, and in the same transaction the second webhook disabled (its delivery already made).
    await inTransaction(t, async (c) => {
      await t.app.get(EventOutbox).record(c, [event(tenant.tenantId)]);
      await c.query(`UPDATE webhooks SET status = 'disabled' WHERE tenant_id = $1 AND id = $2`, [
        tenant.tenantId,
        later.id,
      ]);
    });
    await receiver.waitFor(() => receiver.to(enabledUrl).length === 1);
    // Neither delivery of a disabled webhook is ever claimed, even once retries would be due.
    await roundAfter(t, 1_200);
    expect(receiver.to(disabledUrl)).toEqual([]);
    expect(receiver.to(laterUrl)).toEqual([]);
    expect(await deliveriesOf(later.id)).toEqual([
      expect.objectContaining({ status: 'pending', attempts: 0 }),
    ]);
  });

  it('a webhook whose last 100 deliveries failed is disabled, and then receives nothing', async () => {
    const tenant = await newTenant(t);
    const url = receiver.hook(() => 500);
    const hook = await webhook(tenant.tenantId, url);
    await recordEvents(
      t,
      Array.from({ length: 100 }, () => event(tenant.tenantId)),
    );
    await waitForDeliveries(
      hook.id,
      (r) => r.length === 100 && r.every((d) => d.status === 'failed'),
      30_000,
    );
    expect(await webhookRow(hook.id)).toEqual({ status: 'disabled', consecutive_failures: 100 });
    expect(receiver.to(url)).toHaveLength(500);
    await receiver.waitFor(
      () => t.logs.some((line) => line.includes('webhook disabled')),
      2_000,
      'a log line',
    );

    await recordEvents(t, event(tenant.tenantId));
    await roundAfter(t, 1_200);
    expect(receiver.to(url)).toHaveLength(500);
    expect(await deliveriesOf(hook.id)).toHaveLength(100);
  }, 40_000);

  it("tenant isolation: a tenant's webhooks receive only its own events", async () => {
    const a = await newTenant(t, 'tenant a');
    const b = await newTenant(t, 'tenant b');
    const urlA = receiver.hook();
    const urlB = receiver.hook();
    const hookA = await webhook(a.tenantId, urlA);
    const hookB = await webhook(b.tenantId, urlB);
    await recordEvents(t, [event(a.tenantId), event(a.tenantId)]);
    await receiver.waitFor(() => receiver.to(urlA).length === 2);
    await recordEvents(t, event(b.tenantId));
    await receiver.waitFor(() => receiver.to(urlB).length === 1);
    // Every delivery of either webhook has ended: nothing more is on its way to either receiver.
    const ended = (r: { status: string }[]) => r.every((d) => d.status === 'succeeded');
    await waitForDeliveries(hookA.id, ended);
    await waitForDeliveries(hookB.id, ended);
    expect(receiver.to(urlA).map((r) => payload(r).tenant_id)).toEqual([a.tenantId, a.tenantId]);
    expect(receiver.to(urlB).map((r) => payload(r).tenant_id)).toEqual([b.tenantId]);
  });

  it('deliverDue runs one round on demand: nothing due, nothing claimed', async () => {
    expect(await t.app.get(WebhookDeliveryWorker).deliverDue()).toBe(0);
  });

  it('two instances on one database deliver each event exactly once to a healthy receiver', async () => {
    // Two fresh instances (the previous test closed the first server).
    if (!closed) await t.close();
    t = await startApp({ ...env, DATABASE_URL: database.url });
    closed = false;
    db = t.app.get(DataSource);
    const other = await startApp({ ...env, DATABASE_URL: database.url });
    try {
      const tenant = await newTenant(t);
      const url = receiver.hook();
      const hook = await webhook(tenant.tenantId, url);
      const N = 60;
      // Recorded on both instances, some in batches, so that both are nudged and both poll.
      for (let i = 0; i < N / 6; i++) {
        await Promise.all([
          recordEvents(t, [event(tenant.tenantId), event(tenant.tenantId)]),
          recordEvents(other, [event(tenant.tenantId), event(tenant.tenantId)]),
          recordEvents(t, event(tenant.tenantId)),
          recordEvents(other, event(tenant.tenantId)),
        ]);
      }
      await waitForDeliveries(
        hook.id,
        (r) => r.length === N && r.every((d) => d.status === 'succeeded'),
        20_000,
      );
      // Kept: a duplicate send would be in flight from the other instance, and an absence cannot be polled.
      await pause(500);
      const perId = new Map<string, number>();
      for (const r of receiver.to(url)) {
        const id = r.headers['webhook-id'] as string;
        perId.set(id, (perId.get(id) ?? 0) + 1);
      }
      expect(perId.size).toBe(N);
      expect([...perId.values()].every((n) => n === 1)).toBe(true);
      expect((await deliveriesOf(hook.id)).every((d) => d.attempts === 1)).toBe(true);
    } finally {
      await other.close();
    }
  });
});
