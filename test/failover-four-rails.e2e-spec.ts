import request from 'supertest';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { FakeAdyen } from './support/fake-adyen';
import { FakeBraintree } from './support/fake-braintree';
import { FakeCheckout } from './support/fake-checkout';
import { FakeStripe } from './support/fake-stripe';
import { ORCHESTRATION_PERMISSIONS, waitForConnection } from './support/orchestration';

/** Adyen's generic refusal ("Refused": soft) in its fake; approved by the three others. */
const REFUSED_AT_ADYEN = '4100000000000027';
/** An amount Checkout.com's fake declines with that response code (20005, do not honour: soft). */
const DO_NOT_HONOUR_AT_CHECKOUT = 20005;

/**
 * Failover across the four real rails in one transaction (docs/routing.md): a route rule lists Stripe,
 * Adyen, Checkout.com and Braintree (each a fake of the vendor on loopback), and what each answers (a 429:
 * nothing done; a soft decline) sends the payment to the next, each attempt under its own reference and
 * idempotency key, until one authorizes. At most one vendor holds an authorization.
 */
describe('failover across Stripe, Adyen, Checkout.com and Braintree', () => {
  let t: TestApp;
  let key: string;
  const fakes = {
    stripe: new FakeStripe(),
    adyen: new FakeAdyen(),
    checkout: new FakeCheckout(),
    braintree: new FakeBraintree(),
  };
  const ids: Record<keyof typeof fakes, string> = { stripe: '', adyen: '', checkout: '', braintree: '' };

  const connect = async (formula: string, fields: Record<string, string>) => {
    const res = await request(t.http)
      .post('/orchestration/connections')
      .set('BT-API-KEY', key)
      .send({
        connection_formula_id: formula,
        method: 'card',
        display_name: formula,
        environment: 'test',
        fields: Object.entries(fields).map(([k, value]) => ({ key: k, value })),
        accepted_countries: ['US'],
        accepted_currencies: ['USD'],
      })
      .expect(201);
    expect(await waitForConnection(t, key, res.body.id)).toBe('available');
    return res.body.id as string;
  };
  const RULES = '/orchestration/flows/card-transaction/actions/route-transaction/rules';
  let rule: string | undefined;
  /** The one route rule: the connections in this order (the previous rule deleted). */
  const route = async (order: (keyof typeof fakes)[]) => {
    if (rule) await request(t.http).delete(`${RULES}/${rule}`).set('BT-API-KEY', key).expect(204);
    rule = (
      await request(t.http)
        .post(RULES)
        .set('BT-API-KEY', key)
        .send({
          description: order.join(', then '),
          conditions: [],
          outcome: { type: 'list', result: order.map((name) => ids[name]) },
        })
        .expect(201)
    ).body.id as string;
  };
  const pay = async (number: string, amount: number) => {
    const token = (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({ type: 'card', data: { number, expiration_month: 12, expiration_year: 2030, cvc: '737' } })
        .expect(201)
    ).body.id as string;
    const tx = (
      await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({ amount, currency: 'USD', token, intent: 'authorize' })
        .expect(201)
    ).body as { id: string; status: string; reconciliation_id: string; connection: { id: string } };
    const attempts = (
      await request(t.http)
        .get(`/orchestration/transactions/${tx.id}/attempts`)
        .set('BT-API-KEY', key)
        .expect(200)
    ).body as { number: number; status: string; error_code: string | null; connection: { id: string } }[];
    const name = (id: string) => Object.entries(ids).find(([, v]) => v === id)?.[0];
    return { tx, attempts: attempts.map((a) => [a.number, name(a.connection.id), a.status, a.error_code]) };
  };

  beforeAll(async () => {
    await Promise.all(Object.values(fakes).map((fake) => fake.start()));
    t = await startApp({
      VENDOR_BASE_URLS: Object.entries(fakes)
        .map(([name, fake]) => `${name}-card=${fake.baseUrl}`)
        .join(','),
      PUBLIC_BASE_URL: 'https://vault.example',
    });
    const tenant = await newTenant(t, 'four rails');
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: [...ORCHESTRATION_PERMISSIONS, 'orchestration:flows:update'],
      })
    ).key;
    ids.stripe = await connect('stripe-card', { secret_key: 'sk_test_fake' });
    ids.adyen = await connect('adyen-card', {
      api_key: 'adyen_test_key',
      merchant_account: 'TestMerchant',
      hmac_key: '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056',
    });
    ids.checkout = await connect('checkout-card', {
      secret_key: [...fakes.checkout.secretKeys][0],
      public_key: 'pk_sbox_four_rails',
      processing_channel_id: [...fakes.checkout.processingChannels][0],
    });
    ids.braintree = await connect('braintree-card', {
      merchant_id: 'fake_merchant',
      public_key: 'bt_public_test',
      private_key: 'bt_private_test',
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await Promise.all(Object.values(fakes).map((fake) => fake.close()));
  });

  it('Stripe 429, Adyen refuses (soft), Checkout.com 429: Braintree authorizes as attempt 4', async () => {
    await route(['stripe', 'adyen', 'checkout', 'braintree']);
    fakes.stripe.rateLimitNext = 1;
    fakes.checkout.throttleNext = 1;
    const { tx, attempts } = await pay(REFUSED_AT_ADYEN, 1500);
    expect(tx).toMatchObject({ status: 'authorization_succeeded', connection: { id: ids.braintree } });
    expect(attempts).toEqual([
      [1, 'stripe', 'failed', 'processor_unavailable'],
      [2, 'adyen', 'declined', 'declined'],
      [3, 'checkout', 'failed', 'processor_unavailable'],
      [4, 'braintree', 'succeeded', null],
    ]);
    // Nothing authorized anywhere else: no payment intent at Stripe, none at Checkout.com.
    expect([...fakes.stripe.intents.values()].filter((pi) => pi.status === 'requires_capture')).toEqual([]);
    expect(fakes.checkout.payment(`${tx.reconciliation_id}.a3`)).toBeUndefined();
    expect(fakes.braintree.calls('AuthorizePaymentMethod')).toHaveLength(1);
  });

  it('the other way round: Braintree 429, Checkout.com declines (soft), Adyen 429: Stripe authorizes', async () => {
    await route(['braintree', 'checkout', 'adyen', 'stripe']);
    fakes.braintree.rateLimitNext = 1;
    fakes.adyen.respondNext.push({
      status: 429,
      body: { status: 429, errorCode: '000', message: 'Too many requests', errorType: 'validation' },
    });
    const { tx, attempts } = await pay('4111111145551142', DO_NOT_HONOUR_AT_CHECKOUT);
    expect(tx).toMatchObject({ status: 'authorization_succeeded', connection: { id: ids.stripe } });
    expect(attempts).toEqual([
      [1, 'braintree', 'failed', 'processor_unavailable'],
      [2, 'checkout', 'declined', 'declined'],
      [3, 'adyen', 'failed', 'processor_unavailable'],
      [4, 'stripe', 'succeeded', null],
    ]);
    const atCheckout = fakes.checkout.payment(`${tx.reconciliation_id}.a2`);
    expect(atCheckout?.status).toBe('Declined');
  });
});
