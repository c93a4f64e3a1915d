import request from 'supertest';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { FakeAdyen } from './support/fake-adyen';
import { FakeStripe } from './support/fake-stripe';
import { ORCHESTRATION_PERMISSIONS, settleOwn, waitForConnection } from './support/orchestration';

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
/** A Visa number both fakes approve. */
const VISA = '4111111145551142';

interface Attempt {
  number: number;
  status: string;
  error_code: string | null;
  connection: { id: string; connection_formula_id: string };
  connection_transaction_id: string | null;
}

/**
 * Failover between two real rails (docs/routing.md): a route rule tries Stripe, then Adyen, each a fake
 * of the vendor on loopback. What each vendor does decides whether the next is tried.
 */
describe('failover from Stripe to Adyen', () => {
  let stripe: FakeStripe;
  let adyen: FakeAdyen;
  let t: TestApp;
  let tenant: TestTenant;
  let key: string;
  let stripeId: string;
  let adyenId: string;

  beforeAll(async () => {
    stripe = await new FakeStripe().start();
    adyen = await new FakeAdyen().start();
    t = await startApp({
      VENDOR_BASE_URLS: `stripe-card=${stripe.baseUrl},adyen-card=${adyen.baseUrl}`,
      PUBLIC_BASE_URL: 'https://vault.example',
    });
    tenant = await newTenant(t, 'failover');
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: [...ORCHESTRATION_PERMISSIONS, 'orchestration:flows:update'],
      })
    ).key;
    const connect = async (body: Record<string, unknown>) => {
      const res = await request(t.http)
        .post('/orchestration/connections')
        .set('BT-API-KEY', key)
        .send({
          method: 'card',
          accepted_countries: ['US', 'NL'],
          accepted_currencies: ['USD', 'EUR'],
          environment: 'test',
          ...body,
        })
        .expect(201);
      expect(await waitForConnection(t, key, res.body.id)).toBe('available');
      return res.body.id as string;
    };
    stripeId = await connect({
      connection_formula_id: 'stripe-card',
      display_name: 'Stripe',
      fields: [{ key: 'secret_key', value: 'sk_test_fake' }],
    });
    adyenId = await connect({
      connection_formula_id: 'adyen-card',
      display_name: 'Adyen',
      fields: [
        { key: 'api_key', value: 'adyen_test_key' },
        { key: 'merchant_account', value: 'TestMerchant' },
        { key: 'hmac_key', value: HMAC_KEY },
      ],
    });
    await request(t.http)
      .post('/orchestration/flows/card-transaction/actions/route-transaction/rules')
      .set('BT-API-KEY', key)
      .send({
        description: 'Stripe, then Adyen',
        conditions: [],
        outcome: { type: 'list', result: [stripeId, adyenId] },
      })
      .expect(201);
  });
  afterAll(async () => {
    await t.close();
    await stripe.close();
    await adyen.close();
  });

  const pay = async (number: string, idempotencyKey?: string) => {
    const token = (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({ type: 'card', data: { number, expiration_month: 12, expiration_year: 2030, cvc: '737' } })
        .expect(201)
    ).body.id as string;
    let req = request(t.http).post('/orchestration/transactions').set('BT-API-KEY', key);
    if (idempotencyKey) req = req.set('BT-IDEMPOTENCY-KEY', idempotencyKey);
    const res = await req.send({ amount: 1500, currency: 'USD', token, intent: 'authorize' }).expect(201);
    return res.body as {
      id: string;
      reconciliation_id: string;
      status: string;
      error_code: string | null;
    } & {
      connection: { id: string } | null;
      connection_transaction_id: string | null;
    };
  };
  const attemptsOf = async (id: string, apiKey = key) =>
    (
      await request(t.http)
        .get(`/orchestration/transactions/${id}/attempts`)
        .set('BT-API-KEY', apiKey)
        .expect(200)
    ).body as Attempt[];
  const adyenPaymentsFor = (reconciliationId: string) =>
    adyen
      .posts(/^\/payments$/)
      .filter((r) => String((r.body as { reference?: string }).reference).startsWith(reconciliationId));
  const stripePaymentsFor = (reconciliationId: string) =>
    [...stripe.intents.values()].filter((pi) =>
      String((pi.metadata as { reconciliation_id?: string } | undefined)?.reconciliation_id).startsWith(
        reconciliationId,
      ),
    );

  it('nothing listening at Stripe: the payment goes to Adyen as attempt 2, named as such', async () => {
    await stripe.pause();
    let tx;
    try {
      tx = await pay(VISA);
    } finally {
      await stripe.resume();
    }
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      connection: { id: adyenId },
      error_code: null,
    });
    const attempts = await attemptsOf(tx.id);
    expect(attempts.map((a) => [a.number, a.connection.id, a.status, a.error_code])).toEqual([
      [1, stripeId, 'failed', 'processor_unavailable'],
      [2, adyenId, 'succeeded', null],
    ]);
    expect(attempts[1].connection_transaction_id).toBe(tx.connection_transaction_id);
    const [sent] = adyenPaymentsFor(tx.reconciliation_id);
    expect((sent.body as { reference: string }).reference).toBe(`${tx.reconciliation_id}.a2`);
    expect(sent.headers['idempotency-key']).toBe(`${tx.reconciliation_id}:authorize:2`);
  });

  it('Stripe answers 429: nothing was done there, Adyen authorizes', async () => {
    stripe.rateLimitNext = 1;
    const tx = await pay(VISA);
    expect(tx).toMatchObject({ status: 'authorization_succeeded', connection: { id: adyenId } });
    expect((await attemptsOf(tx.id)).map((a) => [a.status, a.error_code])).toEqual([
      ['failed', 'processor_unavailable'],
      ['succeeded', null],
    ]);
    expect(stripePaymentsFor(tx.reconciliation_id)).toHaveLength(0);
  });

  it('a generic soft decline at Stripe fails over; at most one vendor holds an authorization', async () => {
    const tx = await pay('4000000000000002');
    const attempts = await attemptsOf(tx.id);
    expect(attempts.map((a) => [a.connection.id, a.status, a.error_code])).toEqual([
      [stripeId, 'declined', 'declined'],
      [adyenId, 'succeeded', null],
    ]);
    const atStripe = stripePaymentsFor(tx.reconciliation_id);
    expect(atStripe.map((pi) => pi.status)).toEqual(['requires_payment_method']);
    expect(adyenPaymentsFor(tx.reconciliation_id)).toHaveLength(1);
    // Stripe's idempotency key of attempt 1 is the transaction's own.
    expect(stripe.posts(/^\/v1\/payment_intents$/).at(-1)?.headers['idempotency-key']).toBe(
      `${tx.reconciliation_id}:authorize`,
    );
  });

  it('a hard decline at Stripe ends the transaction: Adyen is never called', async () => {
    const before = adyen.posts(/^\/payments$/).length;
    const tx = await pay('4000000000009995');
    expect(tx).toMatchObject({
      status: 'authorization_declined',
      error_code: 'insufficient_funds',
      connection: { id: stripeId },
    });
    expect(await attemptsOf(tx.id)).toHaveLength(1);
    expect(adyen.posts(/^\/payments$/)).toHaveLength(before);
  });

  it('a 5xx after Stripe received the request: unknown, so no further attempt ever; settlement resolves it; a retry answers it', async () => {
    const before = adyen.posts(/^\/payments$/).length;
    stripe.failNext = 1;
    const tx = await pay(VISA, 'failover-unknown');
    expect(tx).toMatchObject({ status: 'processing', connection: { id: stripeId } });
    expect((await attemptsOf(tx.id)).map((a) => a.status)).toEqual(['processing']);
    const retried = await pay(VISA, 'failover-unknown').catch(() => undefined);
    // The same key with another token is another body: a 4xx, or the same answer; never a new payment.
    if (retried) expect(retried.id).toBe(tx.id);
    await settleOwn(t, { after: 120 });
    const settled = await request(t.http)
      .get(`/orchestration/transactions/${tx.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(settled.body).toMatchObject({ status: 'authorization_failed', connection: { id: stripeId } });
    expect((await attemptsOf(tx.id)).map((a) => [a.number, a.status])).toEqual([[1, 'failed']]);
    expect(adyen.posts(/^\/payments$/)).toHaveLength(before);
  });

  it("another tenant cannot list a transaction's attempts; a key without transactions:read neither", async () => {
    const tx = await pay(VISA);
    const other = await newTenant(t, 'failover-other');
    const otherKey = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    expectProblem(
      await request(t.http).get(`/orchestration/transactions/${tx.id}/attempts`).set('BT-API-KEY', otherKey),
      404,
    );
    const narrow = (
      await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:use'] })
    ).key;
    expectProblem(
      await request(t.http).get(`/orchestration/transactions/${tx.id}/attempts`).set('BT-API-KEY', narrow),
      403,
    );
  });
});
