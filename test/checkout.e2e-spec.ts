import request from 'supertest';
import { expectProblem } from './support/app';
import {
  CHANNEL,
  CheckoutRail,
  defaultFields,
  SECRET_KEY,
  startCheckoutRail,
  Tx,
  WEBHOOK_SECRET,
} from './support/checkout-rail';
import { CHECKOUT_CARDS } from './support/fake-checkout';
import { newConnection, waitForConnection, waitForTransaction } from './support/orchestration';

describe('checkout-card against a fake Checkout.com behind Prism (NAS document, environment test)', () => {
  let r: CheckoutRail;

  beforeAll(async () => {
    r = await startCheckoutRail();
  }, 90_000);
  afterAll(async () => {
    await r?.close();
  });
  beforeEach(() => {
    r.fake.requests.length = 0;
    r.fake.queued.length = 0;
  });
  afterEach(() => {
    // Every request the adapter sent and every answer of the fake matched Checkout.com's own document,
    // and every card source matched the schema its discriminator names (Prism does not check that).
    expect(r.prism.violations()).toEqual([]);
    expect(r.fake.sourceViolations).toEqual([]);
  });

  it('verifies the secret key with an authenticated GET; a refused key fails the connection', async () => {
    const bad = await r.createConnection(r.key, defaultFields('sk_sbox_unknown')).expect(201);
    expect(await waitForConnection(r.t, r.key, bad.body.id)).toBe('failed');
    const [probe] = r.fake.requests.filter((q) => q.method === 'GET');
    expect(probe.path).toMatch(/^\/payments\/pay_\w{26}$/);
    expect(probe.headers.authorization).toBe('Bearer sk_sbox_unknown');
    const shown = await request(r.t.http)
      .get(`/orchestration/connections/${bad.body.id}`)
      .set('BT-API-KEY', r.key);
    expect(JSON.stringify(shown.body)).not.toContain('sk_sbox_unknown');
    expect(JSON.stringify(shown.body)).not.toContain(WEBHOOK_SECRET);
    // A processing channel id that is not one is a 400 naming the field, without echoing it.
    const wrong = await r.createConnection(r.key, [
      ...defaultFields().filter((f) => f.key !== 'processing_channel_id'),
      { key: 'processing_channel_id', value: 'not-a-channel' },
    ]);
    expectProblem(wrong, 400);
    expect(JSON.stringify(wrong.body)).toContain('processing_channel_id');
    expect(JSON.stringify(wrong.body)).not.toContain('not-a-channel');
  });

  it('authorize: one POST /payments with the card source, capture false, the reference and a Cko-Idempotency-Key', async () => {
    const tx = await r.pay(CHECKOUT_CARDS.visa);
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      cvv_response_code: 'match',
      authorized_amount: 1299,
    });
    const [post] = r.fake.posts(/^\/payments$/);
    expect(post.headers['cko-idempotency-key']).toBe(`${tx.reconciliation_id}:authorize`);
    expect(post.headers.authorization).toBe(`Bearer ${SECRET_KEY}`);
    expect(post.body).toEqual({
      source: { type: 'card', number: CHECKOUT_CARDS.visa, expiry_month: 3, expiry_year: 2030, cvv: '100' },
      amount: 1299,
      currency: 'GBP',
      payment_type: 'Regular',
      reference: tx.reconciliation_id,
      capture: false,
      '3ds': { enabled: true },
      success_url: `https://vault.example/orchestration/approvals/return/${tx.reconciliation_id}`,
      failure_url: `https://vault.example/orchestration/approvals/return/${tx.reconciliation_id}`,
      processing_channel_id: CHANNEL,
    });
    const payment = r.fake.payment(tx.reconciliation_id)!;
    expect(tx.connection_transaction_id).toBe(payment.id);
    expect(tx.scheme_transaction_id).toBe(payment.schemeId);
  });

  it('a zero-amount authorization is a card verification at Checkout.com (amount 0, Card Verified)', async () => {
    const tx = await r.pay(CHECKOUT_CARDS.visa, { amount: 0 });
    expect(tx).toMatchObject({ status: 'authorization_succeeded', authorized_amount: 0 });
    const payment = r.fake.payment(tx.reconciliation_id)!;
    expect(payment).toMatchObject({ amount: 0, status: 'Card Verified' });
    expect(r.fake.posts(/^\/payments$/).at(-1)?.body).toMatchObject({ amount: 0, capture: false });
  });

  it('capture (partial) and refund (partial) answer 202: pending until their webhooks settle them', async () => {
    const tx = await r.pay(CHECKOUT_CARDS.visa);
    r.fake.queued.length = 0;
    expect((await r.op(tx.id, 'capture', { amount: 900 }).expect(200)).body.status).toBe('capture_pending');
    const [capture] = r.fake.posts(/\/captures$/);
    expect(capture.path).toBe(`/payments/${tx.connection_transaction_id}/captures`);
    expect(capture.headers['cko-idempotency-key']).toBe(`${tx.reconciliation_id}:capture`);
    expect(capture.body).toEqual({ amount: 900, reference: `${tx.reconciliation_id}.capture` });
    expect(await r.webhooks()).toEqual([200]);
    expect(await r.get(tx.id)).toMatchObject({ status: 'capture_succeeded', captured_amount: 900 });

    const refund = await r.op(tx.id, 'refunds', { amount: 400 }).expect(201);
    expect(refund.body.status).toBe('processing');
    expect(r.fake.posts(/\/refunds$/)[0].body).toMatchObject({ amount: 400 });
    expect(await r.webhooks()).toEqual([200]);
    expect((await r.refundsOf(tx.id))[0]).toMatchObject({
      id: refund.body.id,
      status: 'succeeded',
      amount: 400,
    });
    expect((await r.get(tx.id)).refunded_amount).toBe(400);
  });

  it('void answers authorization_void_pending until payment_voided; intent capture is captured at once', async () => {
    const tx = await r.pay(CHECKOUT_CARDS.visa);
    r.fake.queued.length = 0;
    expect((await r.op(tx.id, 'void').expect(200)).body.status).toBe('authorization_void_pending');
    expect(r.fake.posts(/\/voids$/)[0].body).toEqual({ reference: `${tx.reconciliation_id}.void` });
    await r.webhooks();
    expect((await r.get(tx.id)).status).toBe('authorization_voided');
    const captured = await r.pay(CHECKOUT_CARDS.mastercard, { intent: 'capture' });
    expect(captured).toMatchObject({ status: 'capture_succeeded', captured_amount: 1299 });
    expect(r.fake.posts(/^\/payments$/).at(-1)!.body.capture).toBe(true);
  });

  it('the settlement job settles a 202 operation from GET /payments/{id}/actions without a webhook', async () => {
    const tx = await r.pay(CHECKOUT_CARDS.visa);
    r.fake.actionsAtOnce = true;
    try {
      await r.op(tx.id, 'capture').expect(200);
      const settled = await waitForTransaction(r.t, r.key, tx.id, (x) => x.status !== 'capture_pending');
      expect(settled).toMatchObject({ status: 'capture_succeeded', captured_amount: 1299 });
    } finally {
      r.fake.actionsAtOnce = false;
    }
    expect(r.fake.requests.some((q) => q.method === 'GET' && q.path.endsWith('/actions'))).toBe(true);
  });

  it.each([
    [20005, 'authorization_declined', 'declined'],
    [20051, 'authorization_declined', 'insufficient_funds'],
    [30043, 'authorization_declined', 'lost_or_stolen'],
    [20014, 'authorization_declined', 'invalid_card_number'],
    [20059, 'authorization_declined', 'fraudulent'],
  ])('response code %s is %s with error_code %s', async (amount, status, errorCode) => {
    const tx = await r.pay(CHECKOUT_CARDS.visa, { amount });
    expect(tx).toMatchObject({ status, error_code: errorCode, auth_response_code: String(amount) });
  });

  it('an invalid number (422) fails with invalid_card_number; CVV 000 is incorrect_cvv with no_match', async () => {
    expect(await r.pay(CHECKOUT_CARDS.invalidNumber)).toMatchObject({
      status: 'authorization_failed',
      error_code: 'invalid_card_number',
    });
    expect(await r.pay(CHECKOUT_CARDS.visa, {}, '000')).toMatchObject({
      status: 'authorization_declined',
      error_code: 'incorrect_cvv',
      cvv_response_code: 'no_match',
    });
  });

  it.each([
    [true, 'authorization_succeeded', 'Payment approved'],
    [false, 'authorization_declined', 'Payment declined'],
  ])(
    '3-D Secure (authenticated %s): Pending with a redirect, the approval page, the return',
    async (ok, status, title) => {
      const tx = await r.pay(CHECKOUT_CARDS.threeDS);
      expect(tx.status).toBe('buyer_approval_pending');
      const payment = r.fake.payment(tx.reconciliation_id)!;
      const page = new URL(tx.payment_method.approval_url);
      expect(page.origin).toBe('https://vault.example');
      const redirect = await request(r.t.http).get(page.pathname).expect(303);
      expect(redirect.headers.location).toBe(`${r.fake.baseUrl}/3ds/${payment.id}`);
      const session = r.fake.completeChallenge(tx.reconciliation_id, ok);
      const back = `/orchestration/approvals/return/${tx.reconciliation_id}?cko-session-id=${session}`;
      expect((await request(r.t.http).get(back).expect(200)).text).toContain(title);
      const after = await r.get(tx.id);
      expect(after.status).toBe(status);
      expect(after.payment_method.approval_url).toBeNull();
      if (ok) expect(after.three_d_secure).toMatchObject({ status: 'complete', method: 'challenge' });
      await request(r.t.http).get(back).expect(404);
      expect(r.t.logs.join('\n')).not.toContain(session);
    },
  );

  it('three_d_secure_data goes as 3ds with eci, cryptogram, xid and version', async () => {
    const tx = await r.pay(CHECKOUT_CARDS.threeDS, {
      three_d_secure_data: {
        version: '2.2.0',
        eci: '05',
        cavv: 'AAIBBYNoEwAAACcKhAJkdQAAAAA=',
        directory_response: 'Y',
        ds_transaction_id: 'c4e59ceb-a382-4d6a-bc87-385d591fa09d',
      },
    });
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      three_d_secure: { status: 'complete', method: 'frictionless' },
    });
    expect(r.fake.posts(/^\/payments$/)[0].body['3ds']).toEqual({
      enabled: true,
      eci: '05',
      cryptogram: 'AAIBBYNoEwAAACcKhAJkdQAAAAA=',
      version: '2.2.0',
      xid: 'c4e59ceb-a382-4d6a-bc87-385d591fa09d',
    });
    expect(r.t.logs.join('\n')).not.toContain('AAIBBYNoEwAAACcKhAJkdQAAAAA=');
  });

  it("a buyer's stored card, then merchant-initiated payments with previous_payment_id, stored and no CVV", async () => {
    const buyer = (
      await request(r.t.http)
        .post('/orchestration/buyers')
        .set('BT-API-KEY', r.key)
        .send({ display_name: 'Ada' })
        .expect(201)
    ).body;
    const first = await r.pay(CHECKOUT_CARDS.visa, {
      buyer_id: buyer.id,
      store: true,
      payment_source: 'recurring',
    });
    expect(first.status).toBe('authorization_succeeded');
    const renewal = await r.pay('', {
      buyer_id: buyer.id,
      payment_source: 'recurring',
      merchant_initiated: true,
      is_subsequent_payment: true,
      previous_scheme_transaction_id: first.scheme_transaction_id,
    });
    expect(renewal).toMatchObject({ status: 'authorization_succeeded', cvv_response_code: 'not_provided' });
    const [initial, mit] = r.fake.posts(/^\/payments$/).map((p) => p.body);
    expect(initial).toMatchObject({ payment_type: 'Recurring', source: { cvv: '100' } });
    expect(initial.merchant_initiated).toBeUndefined();
    expect(mit).toMatchObject({
      payment_type: 'Recurring',
      merchant_initiated: true,
      previous_payment_id: first.scheme_transaction_id,
      source: { type: 'card', stored: true },
    });
    expect(mit.source.cvv).toBeUndefined();
    const topUp = await r.pay('', { buyer_id: buyer.id, merchant_initiated: true });
    expect(topUp.status).toBe('authorization_succeeded');
    expect(r.fake.posts(/^\/payments$/)[2].body).toMatchObject({
      payment_type: 'Regular',
      merchant_initiated: true,
    });
  });

  it('routing: a soft decline (20005) or a 429 fails over to the next connection; a hard one (20051) does not', async () => {
    const { key } = await r.newKey();
    const checkout = (await r.createConnection(key).expect(201)).body.id;
    expect(await waitForConnection(r.t, key, checkout)).toBe('available');
    const sandbox = (await newConnection(r.t, key, { formulaId: 'stripe-card', currencies: ['GBP'] })).id;
    await request(r.t.http)
      .post('/orchestration/flows/card-transaction/actions/route-transaction/rules')
      .set('BT-API-KEY', key)
      .send({
        description: 'Checkout.com, then Stripe',
        conditions: [],
        outcome: { type: 'list', result: [checkout, sandbox] },
      })
      .expect(201);
    const routed = async (amount: number) => {
      const res = await request(r.t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({ amount, currency: 'GBP', token: await r.cardToken(key, CHECKOUT_CARDS.visa, '100') })
        .expect(201);
      const attempts = (
        await request(r.t.http)
          .get(`/orchestration/transactions/${res.body.id}/attempts`)
          .set('BT-API-KEY', key)
          .expect(200)
      ).body as Tx[];
      return { tx: res.body as Tx, attempts: attempts.map((a) => [a.connection.id, a.status, a.error_code]) };
    };
    const soft = await routed(20005);
    expect(soft.tx).toMatchObject({ status: 'authorization_succeeded', connection: { id: sandbox } });
    expect(soft.attempts).toEqual([
      [checkout, 'declined', 'declined'],
      [sandbox, 'succeeded', null],
    ]);
    r.fake.throttleNext = 1;
    const throttled = await routed(1000);
    expect(throttled.attempts).toEqual([
      [checkout, 'failed', 'processor_unavailable'],
      [sandbox, 'succeeded', null],
    ]);
    const hard = await routed(20051);
    expect(hard.tx).toMatchObject({ status: 'authorization_declined', error_code: 'insufficient_funds' });
    expect(hard.attempts).toEqual([[checkout, 'declined', 'insufficient_funds']]);
  });

  it('no secret key, webhook secret or card number in the logs', () => {
    const logs = r.t.logs.join('\n');
    for (const secret of [SECRET_KEY, WEBHOOK_SECRET, CHECKOUT_CARDS.visa, CHECKOUT_CARDS.threeDS])
      expect(logs).not.toContain(secret);
  });
});
