import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { CheckoutProcessor } from '../../src/modules/orchestration/processors/checkout/checkout.processor';
import { ProcessorRegistry } from '../../src/modules/orchestration/processors/processor.registry';
import { newApplication, newTenant, startApp, TestApp } from '../support/app';
import { CHECKOUT_CARDS, FakeCheckout } from '../support/fake-checkout';
import { ORCHESTRATION_PERMISSIONS } from '../support/orchestration';
import { freePort } from '../support/processes';
import { api, Server, startServer } from './support';

const WEBHOOK_SECRET = 'whsec_checkout_faults';
const fields = [
  { key: 'secret_key', value: 'sk_sbox_fake_checkout_key' },
  { key: 'public_key', value: 'pk_sbox_fake_checkout_public' },
  { key: 'processing_channel_id', value: 'pc_fakechannel000000000000001' },
  { key: 'webhook_secret', value: WEBHOOK_SECRET },
];

/** A checkout-card connection of a new tenant on `base`, available; its key. */
async function connect(
  recorder: TestApp,
  base: string,
): Promise<{ key: string; connection: string; tenantId: string }> {
  const tenant = await newTenant(recorder);
  const key = (
    await newApplication(recorder, tenant.managementKey, {
      type: 'private',
      permissions: ORCHESTRATION_PERMISSIONS,
    })
  ).key;
  const created = await api(base, key, 'POST', '/orchestration/connections', {
    connection_formula_id: 'checkout-card',
    method: 'card',
    display_name: 'Checkout.com faults',
    environment: 'test',
    fields,
    accepted_countries: ['GB'],
    accepted_currencies: ['GBP'],
  });
  expect(created.status).toBe(201);
  const connection = created.body!.id as string;
  for (let i = 0; i < 100; i++) {
    const got = await api(base, key, 'GET', `/orchestration/connections/${connection}`);
    if (got.body!.status === 'available') break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { key, connection, tenantId: tenant.tenantId };
}

async function pay(base: string, key: string, connection: string, extra: Record<string, unknown> = {}) {
  const token = await api(base, key, 'POST', '/tokenize', {
    type: 'card',
    data: { number: CHECKOUT_CARDS.visa, expiration_month: 3, expiration_year: 2030, cvc: '100' },
  });
  return fetch(`${base}/orchestration/transactions`, {
    method: 'POST',
    headers: { 'BT-API-KEY': key, 'BT-IDEMPOTENCY-KEY': randomUUID(), 'Content-Type': 'application/json' },
    body: JSON.stringify({
      amount: 2500,
      currency: 'GBP',
      connection_id: connection,
      token: token.body!.id,
      ...extra,
    }),
  });
}

describe('checkout-card faults', () => {
  it('nothing listening, 429, 5xx after receipt and a time-out: nothing charged twice, every transaction settles', async () => {
    const fake = await new FakeCheckout().start();
    const port = await freePort();
    const t = await startApp({ VENDOR_BASE_URLS: `checkout-card=${fake.baseUrl}` });
    try {
      await new Promise<void>((resolve) => t.http.listen(port, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${port}`;
      const { key, connection } = await connect(t, base);
      const webhooks = () =>
        fake.sendWebhooks(`${base}/orchestration/notifications/checkout`, WEBHOOK_SECRET);

      // 429: refused unprocessed, nothing charged.
      fake.throttleNext = 1;
      const throttled = (await (await pay(base, key, connection)).json()) as Record<string, unknown>;
      expect(throttled).toMatchObject({
        status: 'authorization_failed',
        error_code: 'processor_unavailable',
      });
      expect(fake.payments.size).toBe(0);

      // 5xx after receipt: the same call again (same Cko-Idempotency-Key) is answered from the first run.
      fake.failAfterNext = 1;
      const answered = (await (await pay(base, key, connection)).json()) as Record<string, unknown>;
      expect(answered).toMatchObject({ status: 'authorization_succeeded' });
      expect(fake.payments.size).toBe(1);

      // A time-out: processing, then its webhooks settle it.
      const processor = t.app
        .get(ProcessorRegistry)
        .for({ formulaId: 'checkout-card', environment: 'test' }) as CheckoutProcessor;
      processor.timeoutMs = 500;
      fake.hangNext = 1;
      fake.queued.length = 0;
      const lost = (await (await pay(base, key, connection, { intent: 'capture' })).json()) as Record<
        string,
        unknown
      >;
      processor.timeoutMs = 20_000;
      expect(lost.status).toBe('processing');
      expect(fake.payments.size).toBe(2);
      expect(await webhooks()).toEqual([200, 200]);
      const settled = await api(base, key, 'GET', `/orchestration/transactions/${lost.id as string}`);
      expect(settled.body).toMatchObject({ status: 'capture_succeeded', captured_amount: 2500 });

      // Nothing listening: nothing reached the vendor, the attempt failed as unavailable.
      await fake.close();
      const refused = (await (await pay(base, key, connection)).json()) as Record<string, unknown>;
      expect(refused).toMatchObject({ status: 'authorization_failed', error_code: 'processor_unavailable' });
      expect(fake.payments.size).toBe(2);
      expect(fake.posts(/^\/payments$/)).toHaveLength(4);
    } finally {
      await t.close();
      await fake.close().catch(() => undefined);
    }
  }, 120_000);

  /**
   * kill -9 of the server while Checkout.com performs a payment (the fake authorizes it and never answers): the
   * transaction is committed `processing` without the payment id. After a restart, the payment_approved and
   * payment_captured webhooks (Checkout.com retries until a server accepts them) settle it with the payment the
   * fake made; nothing calls POST /payments again, so the card is charged once.
   */
  it('kill -9 between the vendor’s answer and the commit: settled by its webhooks after a restart, once', async () => {
    const fake = await new FakeCheckout().start();
    const recorder: TestApp = await startApp({ JOBS_ENABLED: 'false' });
    const databaseUrl = process.env.DATABASE_URL!;
    const env = {
      VENDOR_BASE_URLS: `checkout-card=${fake.baseUrl}`,
      PUBLIC_BASE_URL: 'https://vault.example',
      BOOTSTRAP: 'false',
      LOG_LEVEL: 'error',
    };
    const port = await freePort();
    let server: Server | undefined;
    try {
      server = await startServer(port, databaseUrl, env);
      const { key, connection, tenantId } = await connect(recorder, server.base);
      fake.hangNext = 1;
      const cut = pay(server.base, key, connection, { intent: 'capture' }).then(
        () => 'answered',
        () => 'cut off',
      );
      for (let i = 0; i < 400 && fake.posts(/^\/payments$/).length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 25));
      expect(fake.posts(/^\/payments$/)).toHaveLength(1);
      server.spawned.child.kill('SIGKILL');
      await server.spawned.exited;
      expect(await cut).toBe('cut off');

      const rows: { id: string; status: string; connection_transaction_id: string | null }[] =
        await recorder.app
          .get(DataSource)
          .query('SELECT id, status, connection_transaction_id FROM transactions WHERE tenant_id = $1', [
            tenantId,
          ]);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 'processing', connection_transaction_id: null });
      const payment = [...fake.payments.values()][0];
      expect(payment.status).toBe('Captured');

      server = await startServer(port, databaseUrl, env);
      const url = `${server.base}/orchestration/notifications/checkout`;
      expect(await fake.sendWebhooks(url, WEBHOOK_SECRET)).toEqual([200, 200]);
      const after = await api(server.base, key, 'GET', `/orchestration/transactions/${rows[0].id}`);
      expect(after.body).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: 2500,
        connection_transaction_id: payment.id,
      });
      expect(fake.posts(/^\/payments$/)).toHaveLength(1);
      expect(fake.payments.size).toBe(1);
    } finally {
      if (server) {
        server.spawned.child.kill('SIGKILL');
        await server.spawned.exited;
      }
      await recorder.close();
      await fake.close();
    }
  }, 180_000);
});
