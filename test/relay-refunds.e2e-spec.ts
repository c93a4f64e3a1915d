import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { toReconciliationId } from '../src/modules/orchestration/processors/reconciliation';
import { expectProblem, newApplication, newTenant, TestApp } from './support/app';
import { settleOwn } from './support/orchestration';
import type { FakeAdyen } from './support/fake-adyen';
import type { FakeBraintree } from './support/fake-braintree';
import type { FakeCheckout } from './support/fake-checkout';
import type { FakeStripe } from './support/fake-stripe';
import {
  ADYEN_HMAC,
  CHECKOUT_SECRET,
  RELAY_EVENTS,
  RELAY_PERMISSIONS,
  RelayRails,
  startRelayRails,
} from './support/relay-rails';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Relay refunds (docs/payments.md, "Relay refunds"): a payment made at the vendor before the migration,
 * seeded in each rail's fake, refunded through the tenant's `test` connection once per idempotency key
 * (a replay answers the same and the vendor got one call, under a key derived from the relay refund's id);
 * Adyen's and Checkout.com's settled by their notifications; the sandbox simulates. Then validation,
 * permissions, another tenant, the audit rows and the webhook events.
 */
describe('relay refunds at each rail and the sandbox', () => {
  let rails: RelayRails;
  let t: TestApp;
  let stripe: FakeStripe;
  let adyen: FakeAdyen;
  let checkout: FakeCheckout;
  let braintree: FakeBraintree;
  let base: string;
  let managementKey: string;
  let key: string;
  let connections: Record<string, string>;

  const relay = (body: Json, idempotencyKey: string | null = randomUUID(), apiKey = key) => {
    const req = request(t.http).post('/orchestration/relay/refunds').set('BT-API-KEY', apiKey);
    return (idempotencyKey ? req.set('BT-IDEMPOTENCY-KEY', idempotencyKey) : req).send(body);
  };
  const get = async (id: string, apiKey = key): Promise<Json> =>
    (await request(t.http).get(`/orchestration/relay/refunds/${id}`).set('BT-API-KEY', apiKey).expect(200))
      .body;
  const events = async (id: string) =>
    (
      await t.app
        .get(DataSource)
        .query(`SELECT type, data FROM webhook_events WHERE entity_id = $1 ORDER BY created_at, id`, [id])
    ).map((e: { type: string; data: Json }) => [e.type, e.data.status]);
  /** Asks, answers 201 and replays: the same body, replayed, and the refund as stored. */
  const onceAndReplayed = async (body: Json): Promise<Json> => {
    const idempotencyKey = randomUUID();
    const first = await relay(body, idempotencyKey).expect(201);
    const replay = await relay(body, idempotencyKey).expect(201);
    expect(replay.headers['bt-idempotency-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    expect(first.body).toMatchObject({ type: 'relay_refund', connection_id: body.connection_id });
    return first.body;
  };

  beforeAll(async () => {
    rails = await startRelayRails();
    ({ t, stripe, adyen, checkout, braintree, base, managementKey, key, connections } = rails);
  }, 60_000);
  afterAll(() => rails.close());

  it('Stripe: refunds a PaymentIntent once per key, under an Idempotency-Key derived from the relay refund', async () => {
    const { paymentIntent } = stripe.seedPayment(5000);
    const before = stripe.posts(/^\/v1\/refunds$/).length;
    const refund = await onceAndReplayed({
      connection_id: connections['stripe-card'],
      vendor_payment_id: paymentIntent,
      amount: 1200,
      currency: 'USD',
      reason: 'requested_by_customer',
    });
    expect(refund).toMatchObject({
      vendor_payment_id: paymentIntent,
      amount: 1200,
      currency: 'USD',
      reason: 'requested_by_customer',
      status: 'succeeded',
      vendor_refund_id: expect.stringMatching(/^re_/),
      error_code: null,
    });
    const calls = stripe.posts(/^\/v1\/refunds$/).slice(before);
    expect(calls).toHaveLength(1);
    const reference = toReconciliationId(refund.id);
    expect(calls[0].headers['idempotency-key']).toBe(`${reference}:refund:${refund.id}`);
    expect(calls[0].body).toMatchObject({
      payment_intent: paymentIntent,
      amount: '1200',
      reason: 'requested_by_customer',
    });
    expect(await events(refund.id)).toEqual([
      ['relay:refund:created', 'processing'],
      ['relay:refund:succeeded', 'succeeded'],
    ]);
  });

  it("Stripe: refunds a charge id; a refund past what is left fails with Stripe's code (relay:refund:failed)", async () => {
    const { charge } = stripe.seedPayment(1000);
    const body = { connection_id: connections['stripe-card'], vendor_payment_id: charge, currency: 'USD' };
    const partial = await onceAndReplayed({ ...body, amount: 600 });
    expect(partial).toMatchObject({ status: 'succeeded', reason: null });
    expect(stripe.posts(/^\/v1\/refunds$/).at(-1)!.body).toMatchObject({ charge, amount: '600' });
    const tooMuch = await onceAndReplayed({ ...body, amount: 600 });
    expect(tooMuch).toMatchObject({ status: 'failed', error_code: 'charge_already_refunded' });
    expect(await events(tooMuch.id)).toEqual([
      ['relay:refund:created', 'processing'],
      ['relay:refund:failed', 'failed'],
    ]);
  });

  it('Adyen: /payments/{pspReference}/refunds once per key, processing until its REFUND notification', async () => {
    const psp = adyen.seedPayment(3000, 'USD');
    const refund = await onceAndReplayed({
      connection_id: connections['adyen-card'],
      vendor_payment_id: psp,
      amount: 700,
      currency: 'USD',
    });
    expect(refund).toMatchObject({
      status: 'processing',
      vendor_refund_id: expect.stringMatching(/^[A-Z0-9]{16}$/),
    });
    const calls = adyen.posts(new RegExp(`^/payments/${psp}/refunds$`));
    expect(calls).toHaveLength(1);
    const reference = toReconciliationId(refund.id);
    expect(calls[0].headers['idempotency-key']).toBe(`${reference}:refund:${reference}`);
    expect(calls[0].body).toMatchObject({
      amount: { value: 700, currency: 'USD' },
      reference: `${reference}.${reference}`,
    });
    const notified = await adyen.sendNotifications(
      `${base}/orchestration/vendors/adyen/notifications`,
      ADYEN_HMAC,
    );
    expect(notified.status).toBe(200);
    expect(await get(refund.id)).toMatchObject({
      status: 'succeeded',
      vendor_refund_id: refund.vendor_refund_id,
    });
    expect(await events(refund.id)).toEqual([
      ['relay:refund:created', 'processing'],
      ['relay:refund:succeeded', 'succeeded'],
    ]);
  });

  it('Checkout.com: /payments/{id}/refunds once per key (202), settled by its payment_refunded webhook', async () => {
    const payment = checkout.seedPayment(4000, 'USD');
    const refund = await onceAndReplayed({
      connection_id: connections['checkout-card'],
      vendor_payment_id: payment,
      amount: 1500,
      currency: 'USD',
    });
    expect(refund).toMatchObject({ status: 'processing', vendor_refund_id: expect.stringMatching(/^act_/) });
    const calls = checkout.posts(new RegExp(`^/payments/${payment}/refunds$`));
    expect(calls).toHaveLength(1);
    const reference = toReconciliationId(refund.id);
    expect(calls[0].headers['cko-idempotency-key']).toBe(`${reference}:refund:${reference}`);
    expect(calls[0].body).toMatchObject({ amount: 1500, reference: `${reference}.${reference}` });
    expect(
      await checkout.sendWebhooks(`${base}/orchestration/notifications/checkout`, CHECKOUT_SECRET),
    ).toEqual([200]);
    expect(await get(refund.id)).toMatchObject({ status: 'succeeded' });
    expect((await events(refund.id)).at(-1)).toEqual(['relay:refund:succeeded', 'succeeded']);
  });

  it("Checkout.com without its webhook: the settlement sweep finds the refund among the payment's actions", async () => {
    const payment = checkout.seedPayment(2000, 'USD');
    checkout.actionsAtOnce = true;
    const refund = (
      await relay({
        connection_id: connections['checkout-card'],
        vendor_payment_id: payment,
        amount: 500,
        currency: 'USD',
      }).expect(201)
    ).body;
    checkout.actionsAtOnce = false;
    expect(refund.status).toBe('processing');
    expect(await settleOwn(t, { after: 61, relay: true })).toBeGreaterThanOrEqual(1);
    expect(
      checkout.requests.some((r) => r.method === 'GET' && r.path === `/payments/${payment}/actions`),
    ).toBe(true);
    expect(await get(refund.id)).toMatchObject({
      status: 'succeeded',
      vendor_refund_id: refund.vendor_refund_id,
    });
    expect((await events(refund.id)).at(-1)).toEqual(['relay:refund:succeeded', 'succeeded']);
    checkout.queued.length = 0;
  });

  it('Braintree: refundTransaction of the transaction id once per key, named by an order id of the relay refund', async () => {
    const transaction = braintree.ledger.seedSettled(2500);
    const before = braintree.calls('RefundTransaction').length;
    const refund = await onceAndReplayed({
      connection_id: connections['braintree-card'],
      vendor_payment_id: transaction,
      amount: 1000,
      currency: 'USD',
    });
    expect(refund).toMatchObject({ status: 'succeeded', vendor_refund_id: expect.any(String) });
    const calls = braintree.calls('RefundTransaction').slice(before);
    expect(calls).toHaveLength(1);
    const reference = toReconciliationId(refund.id);
    expect(calls[0].variables.input).toMatchObject({
      transactionId: transaction,
      refund: { amount: '10.00', orderId: `${reference}.${reference}` },
    });
    expect(braintree.invalid).toEqual([]);
  });

  it("the sandbox simulates a refund of any payment id of its vendor's form", async () => {
    const refund = await onceAndReplayed({
      connection_id: connections.sandbox,
      vendor_payment_id: 'pi_3BeforeTheMigration',
      amount: 300,
      currency: 'USD',
    });
    expect(refund).toMatchObject({ status: 'succeeded', vendor_refund_id: expect.any(String) });
    expect(
      (await request(t.http).get('/orchestration/relay/refunds').set('BT-API-KEY', key).expect(200)).body,
    ).toMatchObject({ pagination: { page_number: 1 }, data: expect.arrayContaining([refund]) });
  });

  it('is 400 problem+json naming the field for a bad request; nothing is recorded or sent', async () => {
    const good = {
      connection_id: connections['stripe-card'],
      vendor_payment_id: 'pi_3Good',
      amount: 100,
      currency: 'USD',
    };
    const before = stripe.requests.length;
    const cases: [Json, string][] = [
      [{ ...good, amount: 0 }, 'amount'],
      [{ ...good, amount: 1.5 }, 'amount'],
      [{ ...good, amount: undefined }, 'amount'],
      [{ ...good, currency: 'usd' }, 'currency'],
      [{ ...good, vendor_payment_id: '' }, 'vendor_payment_id'],
      [{ ...good, vendor_payment_id: 'pay_abcdefghijklmnopqrstuvwxyz' }, 'vendor_payment_id'],
      [{ ...good, connection_id: randomUUID() }, 'connection_id'],
      [{ ...good, connection_id: 'nope' }, 'connection_id'],
      [{ ...good, reason: '' }, 'reason'],
    ];
    for (const [body, field] of cases) {
      const res = await relay(body);
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toContain(field);
    }
    expect(stripe.requests.length).toBe(before);
    const [{ n }] = await t.app
      .get(DataSource)
      .query(`SELECT count(*)::int AS n FROM relay_refunds WHERE vendor_payment_id = 'pi_3Good'`);
    expect(n).toBe(0);
  });

  it('needs orchestration:relay: a public key, a private key without it and a session are 403; a management key may', async () => {
    const body = {
      connection_id: connections.sandbox,
      vendor_payment_id: 'pi_3Permissions',
      amount: 100,
      currency: 'USD',
    };
    const pub = await newApplication(t, managementKey, { type: 'public', permissions: ['token:create'] });
    const without = await newApplication(t, managementKey, {
      type: 'private',
      permissions: ['orchestration:connections:update', 'orchestration:transaction:refund'],
    });
    const session = (await request(t.http).post('/sessions').set('BT-API-KEY', pub.key).expect(201)).body;
    for (const caller of [pub.key, without.key, session.session_key]) {
      expectProblem(await relay(body, randomUUID(), caller), 403);
      expectProblem(await request(t.http).get('/orchestration/relay/refunds').set('BT-API-KEY', caller), 403);
    }
    // A public application may not be given it at all.
    expectProblem(
      await request(t.http)
        .post('/applications')
        .set('BT-API-KEY', managementKey)
        .send({ name: 'public relay', type: 'public', permissions: ['orchestration:relay'] }),
      400,
    );
    expect((await relay(body, randomUUID(), managementKey).expect(201)).body.status).toBe('succeeded');
  });

  it("another tenant neither sees nor uses a relay refund or the tenant's connection", async () => {
    const mine = (
      await relay({
        connection_id: connections.sandbox,
        vendor_payment_id: 'pi_3Mine',
        amount: 100,
        currency: 'USD',
      }).expect(201)
    ).body;
    const other = await newTenant(t, 'other');
    const otherKey = (
      await newApplication(t, other.managementKey, { type: 'private', permissions: RELAY_PERMISSIONS })
    ).key;
    expectProblem(
      await request(t.http).get(`/orchestration/relay/refunds/${mine.id}`).set('BT-API-KEY', otherKey),
      404,
    );
    const list = await request(t.http)
      .get('/orchestration/relay/refunds')
      .set('BT-API-KEY', otherKey)
      .expect(200);
    expect(list.body.data).toEqual([]);
    const used = await relay(
      {
        connection_id: connections['stripe-card'],
        vendor_payment_id: 'pi_3Theirs',
        amount: 100,
        currency: 'USD',
      },
      randomUUID(),
      otherKey,
    );
    expectProblem(used, 400);
    expect(used.body.errors).toEqual({ connection_id: ['no such connection'] });
    expect(JSON.stringify(used.body)).not.toContain(connections['stripe-card']);
    // The same idempotency key in another tenant is another request.
    const idempotencyKey = randomUUID();
    await relay(
      { connection_id: connections.sandbox, vendor_payment_id: 'pi_3K', amount: 100, currency: 'USD' },
      idempotencyKey,
    ).expect(201);
    const theirs = await relay(
      { connection_id: connections.sandbox, vendor_payment_id: 'pi_3K', amount: 100, currency: 'USD' },
      idempotencyKey,
      otherKey,
    );
    expectProblem(theirs, 400);
    expect(theirs.headers['bt-idempotency-replayed']).toBeUndefined();
  });

  it('writes relay_refund audit rows (create, then the outcome), listed under GET /logs/entity-types', async () => {
    const refund = (
      await relay({
        connection_id: connections.sandbox,
        vendor_payment_id: 'pi_3Audited',
        amount: 250,
        currency: 'USD',
      }).expect(201)
    ).body;
    await get(refund.id);
    const logs = await request(t.http)
      .get('/logs')
      .query({ entity_type: 'relay_refund', entity_id: refund.id })
      .set('BT-API-KEY', managementKey)
      .expect(200);
    const rows = (logs.body.data as Json[]).map((row) => [row.operation, row.message]).reverse();
    expect(rows).toEqual([
      [
        'create',
        `Relay refund of 250 USD of vendor payment pi_3Audited at connection ${connections.sandbox}: processing`,
      ],
      ['update', 'Vendor answered the relay refund: succeeded'],
      ['read', expect.any(String)],
    ]);
    const types = await request(t.http)
      .get('/logs/entity-types')
      .set('BT-API-KEY', managementKey)
      .expect(200);
    expect(types.body).toContainEqual({ display_name: 'Relay refund', value: 'relay_refund' });
    const eventTypes = await request(t.http)
      .get('/webhooks/event-types')
      .set('BT-API-KEY', managementKey)
      .expect(200);
    expect(eventTypes.body).toEqual(expect.arrayContaining(RELAY_EVENTS));
  });
});
