import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/jobs/clock';
import { RelaySettlementService } from '../../src/modules/orchestration/relay/relay-settlement.service';
import { newApplication, newTenant, startApp, TestApp } from '../support/app';
import { FakeStripe } from '../support/fake-stripe';
import { waitForConnection } from '../support/orchestration';
import { freePort, stop } from '../support/processes';
import { waitFor } from '../support/wait';
import { startServer } from './support';

const REFUNDS = /^\/v1\/refunds$/;

/**
 * kill -9 of the server between Stripe's refund and the commit of its answer (the fake Stripe refunds and
 * never answers), then a restart and the client's retry with the same BT-IDEMPOTENCY-KEY once the dead
 * process's claim has timed out: the retry answers the relay refund the killed request recorded, Stripe is
 * asked once, and the settlement job's relay sweep finds the refund at Stripe (by the relay refund's id in
 * its metadata) and settles it. An application of this process (no jobs) sets the tenant up and runs the
 * sweep; the spawned servers (no jobs either) serve the refund and the retry.
 */
describe('a relay refund whose server is killed after Stripe refunded, retried with its idempotency key', () => {
  let fake: FakeStripe;
  let admin: TestApp;
  let db: DataSource;
  let tenantId: string;
  let apiKey: string;
  let connection: string;
  const env = () => ({ VENDOR_BASE_URLS: `stripe-card=${fake.baseUrl}`, JOBS_ENABLED: 'false' });

  beforeAll(async () => {
    fake = await new FakeStripe().start();
    admin = await startApp({ ...env(), LOG_LEVEL: 'warn' });
    db = admin.app.get(DataSource);
    const tenant = await newTenant(admin, 'relay faults');
    tenantId = tenant.tenantId;
    apiKey = (
      await newApplication(admin, tenant.managementKey, {
        type: 'private',
        permissions: [
          'orchestration:connections:create',
          'orchestration:connections:update',
          'orchestration:relay',
        ],
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

  it('the retry answers the refund recorded before the call, Stripe refunded once, the sweep settles it', async () => {
    const { paymentIntent } = fake.seedPayment(5000);
    const body = {
      connection_id: connection,
      vendor_payment_id: paymentIntent,
      amount: 1500,
      currency: 'USD',
    };
    const key = randomUUID();
    const port = await freePort();
    let server = await startServer(port, process.env.DATABASE_URL!, env());
    const relay = async () => {
      const res = await fetch(`${server.base}/orchestration/relay/refunds`, {
        method: 'POST',
        headers: { 'BT-API-KEY': apiKey, 'BT-IDEMPOTENCY-KEY': key, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      return {
        status: res.status,
        replayed: res.headers.get('bt-idempotency-replayed'),
        text,
        body: JSON.parse(text),
      };
    };
    try {
      const before = fake.posts(REFUNDS).length;
      fake.hangNext = 1;
      const cut = relay().then(
        (res) => res.status,
        () => 'no answer',
      );
      await waitFor(() => fake.posts(REFUNDS).length === before + 1, {
        timeoutMs: 30_000,
        intervalMs: 50,
        what: "Stripe's refund",
      });
      server.spawned.child.kill('SIGKILL');
      await server.spawned.exited;
      expect(await cut).toBe('no answer');

      // What the dead process left: the relay refund, committed as `processing`, pinned on its claim.
      const left: { id: string; status: string; state: string }[] = await db.query(
        `SELECT f.id, f.status, r.state FROM idempotency_records r
           JOIN relay_refunds f ON f.tenant_id = r.tenant_id AND f.id = r.resource_id
          WHERE r.tenant_id = $1 AND r.state = 'processing'`,
        [tenantId],
      );
      expect(left).toHaveLength(1);
      expect(left[0]).toMatchObject({ status: 'processing', state: 'processing' });

      server = await startServer(port, process.env.DATABASE_URL!, env());
      expect((await relay()).status).toBe(409);
      // The claim timeout (60 s) is a constant: the dead process's claim is moved into the past instead.
      await db.query(
        `UPDATE idempotency_records SET claimed_until = now() - interval '1 second'
          WHERE tenant_id = $1 AND resource_id = $2`,
        [tenantId, left[0].id],
      );
      const retry = await relay();
      expect(retry.status).toBe(201);
      expect(retry.replayed).toBeNull();
      expect(retry.body).toMatchObject({ id: left[0].id, status: 'processing' });
      const replay = await relay();
      expect(replay).toMatchObject({ status: 201, replayed: 'true', text: retry.text });
      expect(fake.posts(REFUNDS)).toHaveLength(before + 1);
      expect([...fake.refunds.values()].filter((r) => r.payment_intent === paymentIntent)).toHaveLength(1);
    } finally {
      await stop(server.spawned);
    }

    const clock = admin.app.get(Clock);
    clock.advance(61_000);
    try {
      expect(await admin.app.get(RelaySettlementService).settle()).toBe(1);
    } finally {
      clock.reset();
    }
    const settled = await request(admin.http)
      .get(
        `/orchestration/relay/refunds/${(await db.query(`SELECT id FROM relay_refunds WHERE tenant_id = $1`, [tenantId]))[0].id}`,
      )
      .set('BT-API-KEY', apiKey)
      .expect(200);
    expect(settled.body).toMatchObject({
      status: 'succeeded',
      vendor_refund_id: expect.stringMatching(/^re_/),
    });
    expect(fake.posts(REFUNDS)).toHaveLength(1);
  });
});
