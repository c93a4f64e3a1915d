import { randomUUID } from 'node:crypto';
import { connect, Socket } from 'node:net';
import { DataSource } from 'typeorm';
import { TenantKeysService } from '../../src/common/crypto/tenant-keys.service';
import { newApplication, newTenant, startApp, TestApp } from '../support/app';
import { Destination } from '../support/destination';
import { FakeStripe } from '../support/fake-stripe';
import { ORCHESTRATION_PERMISSIONS } from '../support/orchestration';
import { freePort, stop } from '../support/processes';
import { waitFor } from '../support/wait';
import { createWebhookRow, recordEvents, Receiver } from '../support/webhooks';
import { api, Server, startServer } from './support';

const GRACE_MS = 8_000;
const DRAIN_DELAY_MS = 300;

/** A connection opened now whose request is sent later: the server counts it as busy, not idle. */
async function heldRequest(port: number, path: string): Promise<{ finish: () => Promise<string> }> {
  const socket: Socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  const ended = new Promise<string>((resolve) => socket.once('close', () => resolve(answer)));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
  return {
    finish: () => {
      socket.write('\r\n');
      return ended;
    },
  };
}

const refusal = (port: number) =>
  new Promise<string>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('accepted');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)));
  });

/**
 * SIGTERM to a real server while a slow proxy request, a slow vendor call and two webhook deliveries are in
 * flight (docs/operations.md, "Stopping"): both requests complete 2xx, `/health/ready` answers 503 during
 * the drain, new connections are refused, the delivery that ends is recorded and the one that does not is
 * released (neither is left claimed), and the process exits 0 within SHUTDOWN_GRACE_MS.
 */
describe('graceful shutdown of a server with work in flight', () => {
  it('finishes the requests, releases or finishes the deliveries and exits 0 within the grace', async () => {
    const stripe = await new FakeStripe().start();
    const destination = await new Destination().start();
    const receiver = await new Receiver().start();
    const env = { VENDOR_BASE_URLS: `stripe-card=${stripe.baseUrl}`, OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' };
    // In this process, on the same database, without jobs: makes the tenant and the webhooks, reads rows.
    const recorder: TestApp = await startApp({ ...env, JOBS_ENABLED: 'false' });
    const port = await freePort();
    let server: Server | undefined;
    try {
      const tenant = await newTenant(recorder);
      const key = (
        await newApplication(recorder, tenant.managementKey, {
          type: 'private',
          permissions: ORCHESTRATION_PERMISSIONS,
        })
      ).key;
      const db = recorder.app.get(DataSource);
      const tenantKeys = recorder.app.get(TenantKeysService);
      // One receiver answers after 2 s (the send finishes during the drain), the other never does.
      const slowHook = await createWebhookRow(db, tenantKeys, tenant.tenantId, {
        url: receiver.hook(() => new Promise((resolve) => setTimeout(() => resolve(200), 2_000))),
        events: ['token:updated'],
      });
      const hangingHook = await createWebhookRow(db, tenantKeys, tenant.tenantId, {
        url: receiver.hook(() => 'hang'),
        events: ['token:updated'],
      });

      server = await startServer(port, process.env.DATABASE_URL!, {
        ...env,
        BOOTSTRAP: 'false',
        SHUTDOWN_GRACE_MS: String(GRACE_MS),
        // Shorter than the default 3 s, so that the slow vendor call is still in flight when the drain begins.
        SHUTDOWN_DRAIN_DELAY_MS: String(DRAIN_DELAY_MS),
        WEBHOOK_POLL_MS: '100',
        WEBHOOK_RETRY_SECONDS: '600',
      });
      const base = server.base;
      const created = await api(base, key, 'POST', '/orchestration/connections', {
        connection_formula_id: 'stripe-card',
        method: 'card',
        environment: 'test',
        display_name: 'Stripe',
        accepted_countries: ['US'],
        accepted_currencies: ['USD'],
        fields: [{ key: 'secret_key', value: 'sk_test_fake' }],
      });
      expect(created.status).toBe(201);
      await waitFor(
        async () =>
          (await api(base, key, 'GET', `/orchestration/connections/${String(created.body!.id)}`)).body!
            .status === 'available',
        { what: 'the Stripe connection to be verified' },
      );
      const token = await api(base, key, 'POST', '/tokenize', {
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 3, expiration_year: 2030, cvc: '123' },
      });
      expect(token.status).toBe(201);

      // In flight: a proxy request (its destination answers after 5 s), a payment (Stripe answers after
      // 3 s), and one event's two deliveries.
      const proxied = fetch(`${base}/proxy`, {
        method: 'POST',
        headers: {
          'BT-API-KEY': key,
          'BT-PROXY-URL': destination.url('/slow'),
          'Content-Type': 'text/plain',
        },
        body: 'hello',
      });
      stripe.slowNext = 1;
      const payment = api(base, key, 'POST', '/orchestration/transactions', {
        amount: 1500,
        currency: 'USD',
        token: token.body!.id,
        connection_id: created.body!.id,
        intent: 'authorize',
      });
      const entity = randomUUID();
      await recordEvents(recorder, {
        tenantId: tenant.tenantId,
        type: 'token:updated',
        entityId: entity,
        data: { id: entity },
      });
      await waitFor(
        () =>
          destination.received.length === 1 &&
          stripe.posts(/^\/v1\/payment_intents$/).length === 1 &&
          receiver.received.length === 2,
        { what: 'the proxy request, the vendor call and both deliveries to be under way' },
      );
      const health = await heldRequest(port, '/health/ready');
      // Its first bytes read by the server: a connection with a request begun is not idle.
      await new Promise((resolve) => setTimeout(resolve, 200));

      const before = server.spawned.stdout().length;
      const signalledAt = Date.now();
      server.spawned.child.kill('SIGTERM');
      await waitFor(() => server!.spawned.stdout().includes('shutdown: draining'), {
        intervalMs: 10,
        what: 'the drain to begin',
      });
      const refused = await refusal(port);
      const ready = await health.finish();
      const [proxiedAnswer, paymentAnswer] = await Promise.all([proxied, payment]);
      const code = await server.spawned.exited;
      const stoppedAfter = Date.now() - signalledAt;

      const deliveries: { webhook_id: string; status: string; attempts: number; leased: boolean }[] =
        await db.query(
          `SELECT webhook_id, status, attempts, leased_until IS NOT NULL AS leased FROM webhook_deliveries
            WHERE tenant_id = $1 AND entity_id = $2`,
          [tenant.tenantId, entity],
        );
      const lines = server.spawned
        .stdout()
        .slice(before)
        .split('\n')
        .filter((line) => line.startsWith('shutdown:'));
      process.stdout.write(
        `shutdown: exit ${code} after ${stoppedAfter} ms (grace ${GRACE_MS} ms); proxy ${proxiedAnswer.status}, ` +
          `payment ${paymentAnswer.status} (${String(paymentAnswer.body?.status)}), new connection ${refused}, ` +
          `ready ${ready.split('\r\n')[0]}\n  ${lines.join('\n  ')}\n`,
      );

      expect(proxiedAnswer.status).toBe(200);
      expect(await proxiedAnswer.text()).toBe('late');
      expect(paymentAnswer.status).toBe(201);
      expect(paymentAnswer.body!.status).toBe('authorization_succeeded');
      expect(refused).toBe('ECONNREFUSED');
      expect(ready).toMatch(/^HTTP\/1\.1 503 /);
      expect(ready).toMatch(/\r\nConnection: close\r\n/i);
      expect(code).toBe(0);
      expect(stoppedAfter).toBeLessThan(GRACE_MS);
      // Neither delivery stays claimed: one was delivered, the other given back (its attempt not counted).
      expect(deliveries.find((d) => d.webhook_id === slowHook.id)).toMatchObject({
        status: 'succeeded',
        attempts: 1,
        leased: false,
      });
      expect(deliveries.find((d) => d.webhook_id === hangingHook.id)).toMatchObject({
        status: 'pending',
        attempts: 0,
        leased: false,
      });
      expect(lines).toEqual([
        // SHUTDOWN_DRAIN_DELAY_MS: serving, not ready, before the listener closes.
        `shutdown: SIGTERM: not ready, serving for ${DRAIN_DELAY_MS} ms more`,
        `shutdown: draining 2 requests, no new connections (grace ${GRACE_MS} ms)`,
        expect.stringMatching(/^shutdown: (jobs stopped|requests finished)/),
        expect.stringMatching(/^shutdown: (jobs stopped|requests finished)/),
        expect.stringMatching(/^shutdown: closed after \d+ ms$/),
      ]);
      expect(lines.find((line) => line.startsWith('shutdown: jobs stopped'))).toContain(
        'webhook deliveries: 1 finished, 1 released',
      );
    } finally {
      if (server) await stop(server.spawned);
      await recorder.close();
      await receiver.stop();
      await destination.stop();
      await stripe.close();
    }
  });
});
