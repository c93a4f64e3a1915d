import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { TenantKeysService } from '../../src/common/crypto/tenant-keys.service';
import { newTenant, startApp, TestApp } from '../support/app';
import { createDatabase, dropDatabase } from '../support/test-database';
import { createWebhookRow, Receiver, recordEvents } from '../support/webhooks';
import { waitFor } from '../support/wait';
import { LoadBound } from '../support/contention';

/**
 * Webhook delivery, the cases that measure elapsed time (a hung receiver is cut off after 10 s without
 * holding up the others; the server closes at once with a delivery in flight). The rest of delivery:
 * test/webhook-delivery.e2e-spec.ts. A database of its own, for the same reason as there: other files'
 * workers would claim these deliveries.
 */
describe('webhook delivery, timed', () => {
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
    database = await createDatabase('vault_test_webhooks_timed');
    receiver = await new Receiver().start();
    t = await startApp({ ...env, DATABASE_URL: database.url });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    if (!closed) await t?.close();
    await receiver?.stop();
    if (database) await dropDatabase(database.name);
  });

  const webhook = async (tenantId: string, url: string, events: string[] = ['token:created']) =>
    createWebhookRow(db, t.app.get(TenantKeysService), tenantId, { url, events, status: 'enabled' });

  const event = (
    tenantId: string,
    entityId: string = randomUUID(),
    type: 'token:created' | 'token:updated' = 'token:created',
  ) => ({ tenantId, type, entityId, data: { id: entityId, type: 'token' } });

  const deliveriesOf = (webhookId: string) =>
    db.query<{ status: string; attempts: number; last_status_code: number | null }[]>(
      'SELECT status, attempts, last_status_code FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq',
      [webhookId],
    );
  const waitForDeliveries = (
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

  it('a receiver that hangs is cut off after 10 s and retried, and holds up no other webhook', async () => {
    const tenant = await newTenant(t);
    const hanging = receiver.hook((_, n) => (n === 1 ? 'hang' : 200));
    const healthy = receiver.hook();
    const h = await webhook(tenant.tenantId, hanging, ['token:created']);
    await webhook(tenant.tenantId, healthy, ['token:updated']);
    await recordEvents(t, event(tenant.tenantId, 'hanging-entity'));
    await receiver.waitFor(() => receiver.to(hanging).length === 1);
    // 4 s on a quiet machine, stretched by the contention measured before and after.
    const bound = new LoadBound();
    bound.sample();
    const hungAt = Date.now();

    // While the first attempt hangs, the other webhook's events arrive at once.
    await recordEvents(t, event(tenant.tenantId, 'e1', 'token:updated'));
    await receiver.waitFor(() => receiver.to(healthy).length === 1, 2_000);
    await recordEvents(t, event(tenant.tenantId, 'e2', 'token:updated'));
    await receiver.waitFor(() => receiver.to(healthy).length === 2, 2_000);
    const elapsed = Date.now() - hungAt;
    bound.sample();
    expect(elapsed).toBeLessThan(bound.ms(4_000));

    const rows = await waitForDeliveries(h.id, (r) => r[0]?.status === 'succeeded', 15_000);
    const [first, second] = receiver.to(hanging);
    expect(second.at - first.at).toBeGreaterThanOrEqual(10_000);
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(rows).toEqual([
      expect.objectContaining({ status: 'succeeded', attempts: 2, last_status_code: 200 }),
    ]);
  }, 30_000);

  it('the server closes at once with a delivery in flight, which its lease brings back later', async () => {
    const tenant = await newTenant(t);
    const url = receiver.hook(() => 'hang');
    const hook = await webhook(tenant.tenantId, url);
    await recordEvents(t, event(tenant.tenantId));
    await receiver.waitFor(() => receiver.to(url).length === 1);
    const bound = new LoadBound();
    bound.sample();
    const started = Date.now();
    await t.close();
    closed = true;
    const elapsed = Date.now() - started;
    bound.sample();
    expect(elapsed).toBeLessThan(bound.ms(3_000));
    const client = new Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        'SELECT status, attempts, leased_until FROM webhook_deliveries WHERE webhook_id = $1',
        [hook.id],
      );
      expect(rows).toEqual([{ status: 'pending', attempts: 1, leased_until: expect.any(Date) }]);
      expect(rows[0].leased_until.getTime()).toBeGreaterThan(Date.now());
    } finally {
      await client.end();
    }
  });
});
