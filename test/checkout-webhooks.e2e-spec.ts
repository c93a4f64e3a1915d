import request from 'supertest';
import { randomUUID } from 'node:crypto';
import {
  CHANNEL,
  CheckoutRail,
  defaultFields,
  SECRET_KEY,
  startCheckoutRail,
  WEBHOOK_SECRET,
} from './support/checkout-rail';
import { CHECKOUT_CARDS, signWebhook } from './support/fake-checkout';
import { waitForConnection } from './support/orchestration';

describe('checkout-card webhooks, unknown outcomes and retries (fake Checkout.com behind Prism)', () => {
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

  describe('webhooks', () => {
    it('a wrong, missing or tampered Cko-Signature is a 401 and changes nothing; the genuine one settles', async () => {
      const tx = await r.pay(CHECKOUT_CARDS.visa);
      r.fake.queued.length = 0;
      await r.op(tx.id, 'void').expect(200);
      const events = [...r.fake.queued];
      const body = JSON.stringify(events[0]);
      expect(await r.fake.sendWebhooks(r.webhookUrl, 'whsec_wrong', { events })).toEqual([401]);
      expect(await r.webhooks({ events, signature: null })).toEqual([401]);
      expect(
        await r.webhooks({ events, signature: signWebhook(body, WEBHOOK_SECRET).toUpperCase() }),
      ).toEqual([401]);
      expect(await r.webhooks({ events, tamper: true })).toEqual([401]);
      const refused = await fetch(r.webhookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'cko-signature': 'ab' },
        body,
      });
      expect(await refused.json()).toMatchObject({
        status: 401,
        detail: 'The notification could not be verified.',
      });
      expect((await r.get(tx.id)).status).toBe('authorization_void_pending');
      expect(await r.webhooks({ events })).toEqual([200]);
      const after = await r.get(tx.id);
      expect(after.status).toBe('authorization_voided');
      // Sent again: nothing changes.
      expect(await r.webhooks({ events })).toEqual([200]);
      expect(await r.get(tx.id)).toEqual(after);
    });

    it("another tenant can neither see, touch nor settle (with its own secret) this tenant's transaction", async () => {
      const other = await r.newKey();
      const theirs = (
        await r
          .createConnection(other.key, [
            ...defaultFields().filter((f) => f.key !== 'webhook_secret'),
            { key: 'webhook_secret', value: 'whsec_other_tenant' },
          ])
          .expect(201)
      ).body.id;
      expect(await waitForConnection(r.t, other.key, theirs)).toBe('available');
      const tx = await r.pay(CHECKOUT_CARDS.visa);
      r.fake.queued.length = 0;
      await r.op(tx.id, 'capture').expect(200);
      expect(await r.fake.sendWebhooks(r.webhookUrl, 'whsec_other_tenant')).toEqual([401]);
      await request(r.t.http)
        .get(`/orchestration/transactions/${tx.id}`)
        .set('BT-API-KEY', other.key)
        .expect(404);
      await request(r.t.http)
        .post(`/orchestration/transactions/${tx.id}/void`)
        .set('BT-API-KEY', other.key)
        .send({})
        .expect(404);
      expect((await r.get(tx.id)).status).toBe('capture_pending');
      await r.webhooks();
      expect((await r.get(tx.id)).status).toBe('capture_succeeded');
    });
  });

  describe('unknown outcomes and retries never charge twice', () => {
    it('an answer lost to a time-out: processing, then payment_approved settles it; one payment', async () => {
      r.processor().timeoutMs = 400;
      r.fake.hangNext = 1;
      const tx = await r
        .pay(CHECKOUT_CARDS.visa, { intent: 'capture' })
        .finally(() => (r.processor().timeoutMs = 20_000));
      expect(tx.status).toBe('processing');
      const payment = r.fake.payment(tx.reconciliation_id)!;
      expect(await r.webhooks()).toEqual([200, 200]);
      expect(await r.get(tx.id)).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: 1299,
        connection_transaction_id: payment.id,
      });
      expect(r.fake.posts(/^\/payments$/)).toHaveLength(1);
    });

    it('a 502 after receipt: the same call again with the same Cko-Idempotency-Key answers it; one payment', async () => {
      r.fake.failAfterNext = 1;
      const tx = await r.pay(CHECKOUT_CARDS.visa);
      const payment = r.fake.payment(tx.reconciliation_id)!;
      expect(tx).toMatchObject({ status: 'authorization_succeeded', connection_transaction_id: payment.id });
      const posts = r.fake.posts(/^\/payments$/);
      expect(posts.map((p) => p.headers['cko-idempotency-key'])).toEqual([
        `${tx.reconciliation_id}:authorize`,
        `${tx.reconciliation_id}:authorize`,
      ]);
      expect([...r.fake.payments.values()].filter((p) => p.reference === tx.reconciliation_id)).toHaveLength(
        1,
      );
    });

    it('an unknown outcome with no webhook is settled when the settlement job reaches it (no new attempt)', async () => {
      // Both the call and its repetition answered 502 without Checkout.com doing anything.
      r.fake.failNext = 2;
      const tx = await r.pay(CHECKOUT_CARDS.visa);
      expect(tx.status).toBe('processing');
      await r.settleAfter(61);
      expect(await r.get(tx.id)).toMatchObject({
        status: 'authorization_failed',
        error_code: 'processor_timeout',
      });
      expect(await r.attemptsOf(tx.id)).toHaveLength(1);
    });

    it('a retried API request (same BT-IDEMPOTENCY-KEY) and a repeated vendor call charge once', async () => {
      const token = await r.cardToken(r.key, CHECKOUT_CARDS.visa);
      const idem = randomUUID();
      const send = () =>
        request(r.t.http)
          .post('/orchestration/transactions')
          .set('BT-API-KEY', r.key)
          .set('BT-IDEMPOTENCY-KEY', idem)
          .send({ amount: 500, currency: 'GBP', connection_id: r.connection, token, intent: 'capture' })
          .expect(201);
      expect((await send()).body.id).toBe((await send()).body.id);
      expect(r.fake.posts(/^\/payments$/)).toHaveLength(1);
      const before = r.fake.payments.size;
      const authorize = () =>
        r.processor().authorize({
          credentials: { secret_key: SECRET_KEY, processing_channel_id: CHANNEL },
          reconciliationId: 'crashTest1',
          attempt: 2,
          amount: 700,
          currency: 'GBP',
          country: null,
          intent: 'authorize',
          card: { number: CHECKOUT_CARDS.visa, expiration_month: 3, expiration_year: 2030 },
          paymentSource: 'ecommerce',
          merchantInitiated: false,
          isSubsequentPayment: false,
          previousSchemeTransactionId: null,
          threeDSessionId: null,
          threeDSecureEnabled: false,
        });
      expect((await authorize()).connectionTransactionId).toBe((await authorize()).connectionTransactionId);
      expect(r.fake.payments.size).toBe(before + 1);
      expect(
        r.fake
          .posts()
          .slice(-2)
          .map((p) => [p.headers['cko-idempotency-key'], p.body.reference]),
      ).toEqual([
        ['crashTest1:authorize:2', 'crashTest1.a2'],
        ['crashTest1:authorize:2', 'crashTest1.a2'],
      ]);
    });
  });
});
