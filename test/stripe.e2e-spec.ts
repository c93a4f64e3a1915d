import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { ConnectionsService } from '../src/modules/orchestration/connections/connections.service';
import { ProcessorRegistry } from '../src/modules/orchestration/processors/processor.registry';
import { StripeProcessor } from '../src/modules/orchestration/processors/stripe/stripe.processor';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from './support/app';
import { waitFor } from './support/wait';
import { FakeStripe } from './support/fake-stripe';
import {
  ORCHESTRATION_PERMISSIONS,
  settleOwn,
  verificationLogs,
  waitForConnection,
} from './support/orchestration';

describe('stripe-card against a fake Stripe (environment test)', () => {
  let fake: FakeStripe;
  let t: TestApp;
  let key: string;
  let managementKey: string;
  let connection: string;

  const createConnection = (body: Record<string, unknown>) =>
    request(t.http)
      .post('/orchestration/connections')
      .set('BT-API-KEY', key)
      .send({
        connection_formula_id: 'stripe-card',
        method: 'card',
        display_name: 'Stripe test',
        fields: [{ key: 'secret_key', value: 'sk_test_fake' }],
        accepted_countries: ['US'],
        accepted_currencies: ['USD', 'EUR'],
        environment: 'test',
        ...body,
      });
  const cardToken = async (number: string, cvc?: string): Promise<string> =>
    (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({
          type: 'card',
          data: { number, expiration_month: 12, expiration_year: 2030, ...(cvc ? { cvc } : {}) },
        })
        .expect(201)
    ).body.id;
  const pay = async (number: string, extra: Record<string, unknown> = {}, cvc: string | undefined = '123') =>
    (
      await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({
          amount: 1299,
          currency: 'USD',
          connection_id: connection,
          token: await cardToken(number, cvc),
          ...extra,
        })
        .expect(201)
    ).body;
  const op = (id: string, what: string, body: Record<string, unknown> = {}) =>
    request(t.http).post(`/orchestration/transactions/${id}/${what}`).set('BT-API-KEY', key).send(body);

  beforeAll(async () => {
    fake = await new FakeStripe().start();
    t = await startApp({
      VENDOR_BASE_URLS: `stripe-card=${fake.baseUrl},adyen-card=http://127.0.0.1:4010`,
      PUBLIC_BASE_URL: 'https://vault.example',
    });
    const tenant = await newTenant(t);
    managementKey = tenant.managementKey;
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    const res = await createConnection({}).expect(201);
    expect(res.body.environment).toBe('test');
    connection = res.body.id;
    expect(await waitForConnection(t, key, connection)).toBe('available');
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  it('verifies the key with GET /v1/balance; a refused key, or one of the other mode, fails the connection', async () => {
    const bad = await createConnection({ fields: [{ key: 'secret_key', value: 'sk_test_unknown' }] }).expect(
      201,
    );
    expect(await waitForConnection(t, key, bad.body.id)).toBe('failed');
    const balance = fake.requests.find((r) => r.path === '/v1/balance')!;
    expect(balance.method).toBe('GET');
    expect(balance.headers.authorization).toBe('Bearer sk_test_unknown');
    // Why is in the connection's audit log, a fixed reason that never repeats the key.
    const refused = await verificationLogs(t, managementKey, bad.body.id);
    expect(refused.map((l) => l.message)).toEqual([
      'connection verification failed: Stripe refused the secret key (401)',
    ]);
    expect(JSON.stringify(refused)).not.toContain('sk_test_unknown');
    const live = await createConnection({ fields: [{ key: 'secret_key', value: 'sk_live_fake' }] }).expect(
      201,
    );
    expect(await waitForConnection(t, key, live.body.id)).toBe('failed');
    expect((await verificationLogs(t, managementKey, live.body.id)).map((l) => l.message)).toEqual([
      'connection verification failed: secret_key is a live mode key; a test connection needs a test mode key (sk_test_…)',
    ]);
    const ok = await createConnection({
      environment: 'live',
      fields: [{ key: 'secret_key', value: 'sk_live_fake' }],
    }).expect(201);
    expect(await waitForConnection(t, key, ok.body.id)).toBe('available');
  });

  it('a Stripe that does not answer the check leaves the connection pending, verified once it answers', async () => {
    fake.failNext = 1_000;
    let id: string;
    try {
      id = (await createConnection({}).expect(201)).body.id;
      // Checked at once, then by the sweep: Stripe answers 500 each time.
      const balanceChecks = () => fake.requests.filter((r) => r.path === '/v1/balance').length;
      await waitFor(() => balanceChecks() >= 1, { what: 'the first check of the connection' });
      await t.app.get(ConnectionsService).verifyPending();
      const res = await request(t.http).get(`/orchestration/connections/${id}`).set('BT-API-KEY', key);
      expect(res.body.status).toBe('pending');
      expect(fake.requests.filter((r) => r.path === '/v1/balance').length).toBeGreaterThanOrEqual(2);
    } finally {
      fake.failNext = 0;
    }
    expect(await waitForConnection(t, key, id)).toBe('available');
  });

  it('test and live exist only for formulas with a vendor adapter; sandbox is the default', async () => {
    const res = await createConnection({
      connection_formula_id: 'nuvei-card',
      fields: [
        { key: 'merchant_id', value: 'm' },
        { key: 'merchant_site_id', value: 's' },
        { key: 'secret_key', value: 'k' },
      ],
      accepted_currencies: ['USD'],
    });
    expectProblem(res, 400);
    expect(JSON.stringify(res.body)).toContain('environment');
    expect(JSON.stringify(res.body)).toContain('stripe-card');
    const sandbox = await createConnection({ environment: undefined }).expect(201);
    expect(sandbox.body.environment).toBe('sandbox');
    expectProblem(await createConnection({ environment: 'prod' }), 400);
  });

  it('authorize sends one PaymentIntent with raw card data, manual capture and an Idempotency-Key', async () => {
    const tx = await pay('4242424242424242');
    expect(tx).toMatchObject({ status: 'authorization_succeeded', cvv_response_code: 'match' });
    expect(tx.connection_transaction_id).toMatch(/^pi_/);
    const [post] = fake.posts();
    expect(fake.posts()).toHaveLength(1);
    expect(post.path).toBe('/v1/payment_intents');
    expect(post.headers.authorization).toBe('Bearer sk_test_fake');
    expect(post.headers['idempotency-key']).toBe(`${tx.reconciliation_id}:authorize`);
    expect(post.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(post.body).toEqual({
      amount: '1299',
      currency: 'usd',
      confirm: 'true',
      capture_method: 'manual',
      payment_method_data: {
        type: 'card',
        card: { number: '4242424242424242', exp_month: '12', exp_year: '2030', cvc: '123' },
      },
      return_url: `https://vault.example/orchestration/approvals/return/${tx.reconciliation_id}`,
      metadata: { reconciliation_id: tx.reconciliation_id },
      expand: { '0': 'latest_charge' },
    });
  });

  it('who starts the payment: off_session for a merchant-initiated one, setup_future_usage for a first stored-card one', async () => {
    const fields = async (extra: Record<string, unknown>, cvc?: string) => {
      const before = fake.posts(/^\/v1\/payment_intents$/).length;
      const tx = await pay('4242424242424242', extra, cvc);
      const post = fake.posts(/^\/v1\/payment_intents$/)[before];
      const { off_session, setup_future_usage, return_url } = post.body;
      return { tx, sent: { off_session, setup_future_usage, return_url: return_url !== undefined } };
    };
    // A renewal: the buyer is not there. No return URL (nothing to redirect), no setup_future_usage.
    const renewal = await fields(
      {
        payment_source: 'recurring',
        merchant_initiated: true,
        is_subsequent_payment: true,
        previous_scheme_transaction_id: '123456789012345',
      },
      undefined,
    );
    expect(renewal.sent).toEqual({ off_session: 'true', setup_future_usage: undefined, return_url: false });
    // The scheme's transaction id of the payment, for the next one.
    expect(renewal.tx.scheme_transaction_id).toMatch(/^[0-9]{15}$/);
    // The first payment of a subscription, the buyer present: Stripe keeps the card for later.
    const first = await fields({ payment_source: 'recurring' });
    expect(first.sent).toEqual({
      off_session: undefined,
      setup_future_usage: 'off_session',
      return_url: true,
    });
    const onFile = await fields({ payment_source: 'card_on_file' });
    expect(onFile.sent).toEqual({
      off_session: undefined,
      setup_future_usage: 'off_session',
      return_url: true,
    });
    // A later customer-initiated one, and a plain ecommerce payment: neither.
    const later = await fields({
      payment_source: 'card_on_file',
      is_subsequent_payment: true,
      previous_scheme_transaction_id: first.tx.scheme_transaction_id,
    });
    expect(later.sent).toEqual({ off_session: undefined, setup_future_usage: undefined, return_url: true });
    const plain = await fields({});
    expect(plain.sent).toEqual({ off_session: undefined, setup_future_usage: undefined, return_url: true });
  });

  it('three_d_secure_data goes to Stripe as payment_method_options[card][three_d_secure]', async () => {
    const tx = await pay('4242424242424242', {
      three_d_secure_data: {
        version: '2.1.0',
        eci: '05',
        cavv: 'AJkBByEyYgAAAASwgmEodQAAAAA=',
        authentication_response: 'Y',
        ds_transaction_id: 'f25084f0-5b16-4c0a-ae5d-b24808a95e4b',
      },
    });
    expect(tx.three_d_secure).toEqual({ version: '2.1.0', status: 'complete', method: 'frictionless' });
    const post = fake.posts(/^\/v1\/payment_intents$/).at(-1)!;
    expect(post.body.payment_method_options).toEqual({
      card: {
        three_d_secure: {
          version: '2.1.0',
          electronic_commerce_indicator: '05',
          cryptogram: 'AJkBByEyYgAAAASwgmEodQAAAAA=',
          transaction_id: 'f25084f0-5b16-4c0a-ae5d-b24808a95e4b',
          ares_trans_status: 'Y',
        },
      },
    });
  });

  it('captures (partially), then refunds (partially, then the rest)', async () => {
    const tx = await pay('4242424242424242');
    fake.requests.length = 0;
    const captured = await op(tx.id, 'capture', { amount: 1000 }).expect(200);
    expect(captured.body).toMatchObject({ status: 'capture_succeeded', captured_amount: 1000 });
    const [capture] = fake.posts();
    expect(capture.path).toBe(`/v1/payment_intents/${tx.connection_transaction_id}/capture`);
    expect(capture.body).toEqual({ amount_to_capture: '1000' });
    expect(capture.headers['idempotency-key']).toBe(`${tx.reconciliation_id}:capture`);

    const first = await op(tx.id, 'refunds', { amount: 400 }).expect(201);
    expect(first.body).toMatchObject({ status: 'succeeded', amount: 400 });
    const rest = await op(tx.id, 'refunds').expect(201);
    expect(rest.body).toMatchObject({ status: 'succeeded', amount: 600 });
    const refunds = fake.posts(/^\/v1\/refunds$/);
    expect(refunds.map((r) => r.body.amount)).toEqual(['400', '600']);
    expect(refunds[0].body).toEqual({
      payment_intent: tx.connection_transaction_id,
      amount: '400',
      metadata: { reconciliation_id: tx.reconciliation_id, refund_id: first.body.id },
    });
    expect(refunds[0].headers['idempotency-key']).toBe(`${tx.reconciliation_id}:refund:${first.body.id}`);
  });

  it('intent capture uses automatic capture; void cancels', async () => {
    const captured = await pay('4242424242424242', { intent: 'capture' });
    expect(captured).toMatchObject({ status: 'capture_succeeded' });
    expect(fake.posts()[0].body.capture_method).toBe('automatic');
    const tx = await pay('4242424242424242');
    fake.requests.length = 0;
    const voided = await op(tx.id, 'void').expect(200);
    expect(voided.body.status).toBe('authorization_voided');
    expect(fake.posts()).toHaveLength(1);
    expect(fake.posts()[0].path).toBe(`/v1/payment_intents/${tx.connection_transaction_id}/cancel`);
    expect(fake.posts()[0].body).toEqual({});
    expect(fake.posts()[0].headers['idempotency-key']).toBe(`${tx.reconciliation_id}:void`);
  });

  it.each([
    ['4000000000000002', 'declined', '05', 'match'],
    ['4000000000009995', 'insufficient_funds', '51', 'unavailable'],
    ['4000000000000069', 'expired_card', '54', 'unavailable'],
    ['4000000000000127', 'incorrect_cvv', 'N7', 'no_match'],
  ])('declines %s as %s', async (number, errorCode, authCode) => {
    const tx = await pay(number);
    expect(tx).toMatchObject({
      status: 'authorization_declined',
      error_code: errorCode,
      auth_response_code: authCode,
    });
  });

  it('a Stripe processing_error or an invalid request is authorization_failed, never a 5xx', async () => {
    expect(await pay('4000000000000119')).toMatchObject({
      status: 'authorization_failed',
      error_code: 'service_error',
    });
    const jpy = await request(t.http)
      .post('/orchestration/transactions')
      .set('BT-API-KEY', key)
      .send({
        amount: 0,
        currency: 'USD',
        connection_id: connection,
        token: await cardToken('4000000000000002'),
      })
      .expect(201);
    expect(jpy.body.status).toBe('authorization_declined');
    expect(fake.posts(/setup_intents/)).toHaveLength(1);
  });

  it('a zero-amount authorization is a confirmed SetupIntent', async () => {
    const tx = await pay('4242424242424242', { amount: 0 });
    expect(tx.status).toBe('authorization_succeeded');
    expect(tx.connection_transaction_id).toMatch(/^seti_/);
    const [post] = fake.posts();
    expect(post.path).toBe('/v1/setup_intents');
    expect(post.body).toMatchObject({ confirm: 'true', payment_method_data: { type: 'card' } });
  });

  it('a Stripe 5xx leaves the transaction processing; the settlement job finds the PaymentIntent', async () => {
    fake.failNext = 1;
    const tx = await pay('4242424242424242');
    expect(tx).toMatchObject({ status: 'processing', intent_outcome: 'pending' });
    await settleOwn(t, { after: 61 });
    const after = await request(t.http)
      .get(`/orchestration/transactions/${tx.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    // The 500 performed nothing: Stripe knows no PaymentIntent for it.
    expect(after.body).toMatchObject({ status: 'authorization_failed', error_code: 'processor_timeout' });
  });

  it('a time-out after Stripe charged: processing, then settled as charged; one PaymentIntent', async () => {
    const processor = t.app
      .get(ProcessorRegistry)
      .for({ formulaId: 'stripe-card', environment: 'test' }) as StripeProcessor;
    processor.timeoutMs = 500;
    fake.hangNext = 1;
    let tx: { id: string; status: string };
    try {
      tx = await pay('4242424242424242', { intent: 'capture' });
    } finally {
      processor.timeoutMs = 20_000;
    }
    expect(tx.status).toBe('processing');
    await settleOwn(t, { after: 61 });
    const after = await request(t.http)
      .get(`/orchestration/transactions/${tx.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(after.body).toMatchObject({ status: 'capture_succeeded', captured_amount: 1299 });
    expect(fake.posts(/^\/v1\/payment_intents$/)).toHaveLength(1);
  });

  const settleLater = async () => {
    await settleOwn(t, { after: 61 });
  };
  const get = async (id: string) =>
    (await request(t.http).get(`/orchestration/transactions/${id}`).set('BT-API-KEY', key).expect(200)).body;

  it('a capture, a void or a refund Stripe performed but never answered is settled from Stripe', async () => {
    const processor = t.app
      .get(ProcessorRegistry)
      .for({ formulaId: 'stripe-card', environment: 'test' }) as StripeProcessor;
    const unanswered = async <T>(work: () => Promise<T>): Promise<T> => {
      processor.timeoutMs = 300;
      fake.hangNext = 1;
      try {
        return await work();
      } finally {
        processor.timeoutMs = 20_000;
      }
    };
    const captured = await pay('4242424242424242');
    const capture = await unanswered(() => op(captured.id, 'capture', { amount: 900 }).expect(200));
    expect(capture.body.status).toBe('processing');
    const voided = await pay('4242424242424242');
    expect((await unanswered(() => op(voided.id, 'void').expect(200))).body.status).toBe('processing');
    const refunded = await pay('4242424242424242', { intent: 'capture' });
    const refund = await unanswered(() => op(refunded.id, 'refunds', { amount: 299 }).expect(201));
    expect(refund.body.status).toBe('processing');

    await settleLater();
    expect(await get(captured.id)).toMatchObject({ status: 'capture_succeeded', captured_amount: 900 });
    expect((await get(voided.id)).status).toBe('authorization_voided');
    const refunds = await request(t.http)
      .get(`/orchestration/transactions/${refunded.id}/refunds`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(refunds.body.data[0]).toMatchObject({ id: refund.body.id, status: 'succeeded', amount: 299 });
    expect((await get(refunded.id)).refunded_amount).toBe(299);
  });

  it("a capture Stripe refuses (4xx) keeps the authorization, with Stripe's code", async () => {
    const tx = await pay('4242424242424242');
    fake.intents.get(tx.connection_transaction_id)!.status = 'canceled';
    const res = await op(tx.id, 'capture').expect(200);
    expect(res.body).toMatchObject({
      status: 'authorization_succeeded',
      error_code: 'payment_intent_unexpected_state',
    });
  });

  it('a retried API request (same BT-IDEMPOTENCY-KEY) charges once', async () => {
    const token = await cardToken('4242424242424242');
    const idem = randomUUID();
    const send = () =>
      request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .set('BT-IDEMPOTENCY-KEY', idem)
        .send({ amount: 500, currency: 'USD', connection_id: connection, token, intent: 'capture' })
        .expect(201);
    const first = await send();
    const second = await send();
    expect(second.body.id).toBe(first.body.id);
    expect(fake.posts(/^\/v1\/payment_intents$/)).toHaveLength(1);
  });

  it('the same reconciliation id sent twice (a crash between our commit and the call) makes one PaymentIntent', async () => {
    const processor = t.app.get(ProcessorRegistry).for({ formulaId: 'stripe-card', environment: 'test' });
    const before = fake.intents.size;
    const authorize = () =>
      processor.authorize({
        credentials: { secret_key: 'sk_test_fake' },
        reconciliationId: 'crashTest1',
        attempt: 1,
        amount: 700,
        currency: 'USD',
        country: null,
        intent: 'authorize',
        card: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
        paymentSource: 'ecommerce',
        merchantInitiated: false,
        isSubsequentPayment: false,
        previousSchemeTransactionId: null,
        threeDSessionId: null,
        threeDSecureEnabled: true,
      });
    const a = await authorize();
    const b = await authorize();
    expect(b.connectionTransactionId).toBe(a.connectionTransactionId);
    expect(fake.intents.size).toBe(before + 1);
    expect(fake.posts().map((r) => r.headers['idempotency-key'])).toEqual([
      'crashTest1:authorize',
      'crashTest1:authorize',
    ]);
  });

  it.each([
    ['4000002500003155', true, 'authorization_succeeded', 'Payment approved'],
    ['4000000000003220', false, 'authorization_declined', 'Payment declined'],
  ])(
    '3-D Secure (%s): buyer_approval_pending, the approval page sends the buyer to Stripe, the return completes it',
    async (number, authenticated, status, title) => {
      const tx = await pay(number);
      expect(tx.status).toBe('buyer_approval_pending');
      const [post] = fake.posts();
      expect(post.body.return_url).toBe(
        `https://vault.example/orchestration/approvals/return/${tx.reconciliation_id}`,
      );
      const page = new URL(tx.payment_method.approval_url);
      expect(page.origin).toBe('https://vault.example');
      const redirect = await request(t.http).get(page.pathname).expect(303);
      expect(redirect.headers.location).toBe(`${fake.baseUrl}/3ds/${tx.connection_transaction_id}`);

      fake.completeChallenge(tx.connection_transaction_id, authenticated);
      const returnPath = new URL(String(post.body.return_url)).pathname;
      // A return naming another PaymentIntent changes nothing.
      await request(t.http).get(`${returnPath}?payment_intent=pi_other`).expect(404);
      const back = await request(t.http)
        .get(
          `${returnPath}?payment_intent=${tx.connection_transaction_id}&payment_intent_client_secret=pi_secret_x`,
        )
        .expect(200);
      expect(back.text).toContain(title);
      const after = await request(t.http)
        .get(`/orchestration/transactions/${tx.id}`)
        .set('BT-API-KEY', key)
        .expect(200);
      expect(after.body.status).toBe(status);
      expect(after.body.payment_method.approval_url).toBeNull();
      // Used: a second return answers not found.
      await request(t.http).get(`${returnPath}?payment_intent=${tx.connection_transaction_id}`).expect(404);
      expect(t.logs.join('\n')).not.toContain('pi_secret_x');
    },
  );

  it('a return Stripe does not answer leaves the payment processing; the settlement job completes it', async () => {
    const tx = await pay('4000002500003155', { intent: 'capture' });
    expect(tx.status).toBe('buyer_approval_pending');
    fake.completeChallenge(tx.connection_transaction_id, true);
    fake.failNext = 1;
    const back = await request(t.http)
      .get(
        `/orchestration/approvals/return/${tx.reconciliation_id}?payment_intent=${tx.connection_transaction_id}`,
      )
      .expect(200);
    expect(back.text).toContain('Payment being confirmed');
    expect((await get(tx.id)).status).toBe('processing');
    await settleLater();
    expect(await get(tx.id)).toMatchObject({ status: 'capture_succeeded', captured_amount: 1299 });
  });

  it('an expired challenge cancels the PaymentIntent; one authenticated at Stripe meanwhile stands', async () => {
    const abandoned = await pay('4000002500003155', { intent: 'capture' });
    const lateButDone = await pay('4000002500003155');
    fake.completeChallenge(lateButDone.connection_transaction_id, true);
    fake.requests.length = 0;
    await settleOwn(t, { after: 16 * 60 });
    expect(await get(abandoned.id)).toMatchObject({
      status: 'authorization_failed',
      error_code: 'approval_expired',
    });
    expect(fake.intents.get(abandoned.connection_transaction_id)!.status).toBe('canceled');
    // The app's own settlement tick may run beside the direct call: a second cancel then carries the
    // same Idempotency-Key, so Stripe answers it as the first.
    const cancels = fake.posts(/\/cancel$/);
    expect([...new Set(cancels.map((r) => r.path))]).toEqual([
      `/v1/payment_intents/${abandoned.connection_transaction_id}/cancel`,
    ]);
    expect(new Set(cancels.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(await get(lateButDone.id)).toMatchObject({
      status: 'authorization_succeeded',
      authorized_amount: 1299,
    });
    expect((await get(lateButDone.id)).payment_method.approval_url).toBeNull();
  });

  it('card numbers and secret keys never reach the logs', () => {
    const logs = t.logs.join('\n');
    expect(logs).not.toContain('4242424242424242');
    expect(logs).not.toContain('4000000000000002');
    expect(logs).not.toContain('sk_test_fake');
    expect(logs).not.toContain('sk_live_fake');
  });
});
