import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/jobs/clock';
import { fromReconciliationId } from '../../src/modules/orchestration/processors/reconciliation';
import { SettlementService } from '../../src/modules/orchestration/transactions/settlement.service';
import { newApplication, newTenant, startApp, TestApp } from '../support/app';
import { FakeStripe } from '../support/fake-stripe';
import { ORCHESTRATION_PERMISSIONS, waitForConnection } from '../support/orchestration';
import { freePort, stop } from '../support/processes';
import { waitFor } from '../support/wait';
import { Server, startServer } from './support';

const PAYMENT_INTENTS = /^\/v1\/payment_intents$/;

/**
 * kill -9 of the server while it pays through Stripe (a `test` stripe-card connection against the fake
 * Stripe), then a restart and the client's retry with the same BT-IDEMPOTENCY-KEY once the dead
 * process's claim has timed out: the retry answers the transaction the killed request created, and
 * Stripe is asked to pay once. An application of this process (no jobs) sets the tenant up and runs
 * the settlement job's pass; the spawned servers (no jobs either) serve the payment and the retry.
 */
describe('a payment whose server is killed mid-request, retried with its idempotency key', () => {
  let fake: FakeStripe;
  let admin: TestApp;
  let db: DataSource;
  let tenantId: string;
  let apiKey: string;
  let connection: string;
  const databaseUrl = () => process.env.DATABASE_URL!;
  const env = () => ({ VENDOR_BASE_URLS: `stripe-card=${fake.baseUrl}`, JOBS_ENABLED: 'false' });

  beforeAll(async () => {
    fake = await new FakeStripe().start();
    admin = await startApp({ ...env(), LOG_LEVEL: 'warn' });
    db = admin.app.get(DataSource);
    const tenant = await newTenant(admin, 'idempotency faults');
    tenantId = tenant.tenantId;
    apiKey = (
      await newApplication(admin, tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    connection = (
      await request(admin.http)
        .post('/orchestration/connections')
        .set('BT-API-KEY', apiKey)
        .send({
          connection_formula_id: 'stripe-card',
          method: 'card',
          display_name: 'Stripe test',
          fields: [{ key: 'secret_key', value: 'sk_test_fake' }],
          accepted_countries: ['US'],
          accepted_currencies: ['USD'],
          environment: 'test',
        })
        .expect(201)
    ).body.id;
    expect(await waitForConnection(admin, apiKey, connection)).toBe('available');
  });
  afterAll(async () => {
    await admin.close();
    await fake.close();
  });

  const paymentBody = async () => ({
    amount: 2500,
    currency: 'USD',
    connection_id: connection,
    token: (
      await request(admin.http)
        .post('/tokenize')
        .set('BT-API-KEY', apiKey)
        .send({
          type: 'card',
          data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' },
        })
        .expect(201)
    ).body.id as string,
  });
  const pay = async (server: Server, body: object, key: string) => {
    const res = await fetch(`${server.base}/orchestration/transactions`, {
      method: 'POST',
      headers: { 'BT-API-KEY': apiKey, 'BT-IDEMPOTENCY-KEY': key, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      replayed: res.headers.get('bt-idempotency-replayed'),
      text,
      body: JSON.parse(text) as { id: string; status: string },
    };
  };
  const transactions = async (): Promise<number> =>
    (await db.query(`SELECT count(*)::int AS n FROM transactions WHERE tenant_id = $1`, [tenantId]))[0].n;

  /**
   * Pays with the fake Stripe told to `hangNext` (charge, never answer) or `stallNext` (neither), kills
   * the server once Stripe has the PaymentIntent request, restarts it and retries: answers the id.
   */
  async function killedMidPayment(mode: 'hangNext' | 'stallNext'): Promise<string> {
    const port = await freePort();
    let server = await startServer(port, databaseUrl(), env());
    try {
      const body = await paymentBody();
      const key = randomUUID();
      const creates = fake.posts(PAYMENT_INTENTS).length;
      const before = await transactions();
      fake[mode] = 1;
      const cut = pay(server, body, key).then(
        (res) => res.status,
        () => 'no answer',
      );
      await waitFor(() => fake.posts(PAYMENT_INTENTS).length === creates + 1, {
        timeoutMs: 30_000,
        intervalMs: 50,
        what: 'the PaymentIntent',
      });
      server.spawned.child.kill('SIGKILL');
      await server.spawned.exited;
      expect(await cut).toBe('no answer');

      // What the dead process left: the transaction, committed as `processing`, pinned on its claim.
      const left: { id: string; status: string; state: string }[] = await db.query(
        `SELECT t.id, t.status, r.state FROM idempotency_records r
           JOIN transactions t ON t.tenant_id = r.tenant_id AND t.id = r.resource_id
          WHERE r.tenant_id = $1 AND r.state = 'processing'`,
        [tenantId],
      );
      expect(left).toHaveLength(1);
      expect(left[0]).toMatchObject({ status: 'processing', state: 'processing' });

      server = await startServer(port, databaseUrl(), env());
      // The claim still holds: the retry is told to wait.
      const early = await pay(server, body, key);
      expect(early.status).toBe(409);
      // The claim timeout (CLAIM_TIMEOUT_MS, 60 s) is a constant, not configurable: instead of waiting
      // a minute, the dead process's claim is moved into the past, as time would have it.
      await db.query(
        `UPDATE idempotency_records SET claimed_until = now() - interval '1 second'
          WHERE tenant_id = $1 AND resource_id = $2`,
        [tenantId, left[0].id],
      );
      const retry = await pay(server, body, key);
      expect(retry.status).toBe(201);
      expect(retry.replayed).toBeNull();
      expect(retry.body).toMatchObject({ id: left[0].id, status: 'processing' });
      const replay = await pay(server, body, key);
      expect(replay).toMatchObject({ status: 201, replayed: 'true', text: retry.text });
      expect(fake.posts(PAYMENT_INTENTS)).toHaveLength(creates + 1);
      expect(await transactions()).toBe(before + 1);
      return retry.body.id;
    } finally {
      await stop(server.spawned);
    }
  }

  /** The settlement job's pass, once the transaction counts as stuck (STUCK_AFTER_MS, clock moved). */
  async function settled(id: string): Promise<{ status: string }> {
    const clock = admin.app.get(Clock);
    clock.advance(61_000);
    try {
      await admin.app.get(SettlementService).settle();
    } finally {
      clock.reset();
    }
    return (
      await request(admin.http).get(`/orchestration/transactions/${id}`).set('BT-API-KEY', apiKey).expect(200)
    ).body;
  }

  it('killed while Stripe charges: the retry answers the first transaction, one PaymentIntent, settled as authorized', async () => {
    const intents = fake.intents.size;
    const id = await killedMidPayment('hangNext');
    // Stripe performed the one request it got: one PaymentIntent, for this transaction.
    expect(fake.intents.size).toBe(intents + 1);
    const made = [...fake.intents.values()].at(-1)!;
    expect(fromReconciliationId(String((made.metadata as Record<string, unknown>).reconciliation_id))).toBe(
      id,
    );
    expect((await settled(id)).status).toBe('authorization_succeeded');
  });

  it('killed before Stripe acted on the request: the retry answers the first transaction, settled as failed', async () => {
    const intents = fake.intents.size;
    const id = await killedMidPayment('stallNext');
    expect(fake.intents.size).toBe(intents);
    expect(await settled(id)).toMatchObject({ status: 'authorization_failed' });
    expect(fake.posts(PAYMENT_INTENTS).length).toBe(intents + 1);
  });
});
