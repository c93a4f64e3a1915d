import request from 'supertest';
import type { TestApp } from './support/app';
import { FourRails, type Rail } from './support/four-rails';
import { namedAttempts, oneRouteRule } from './support/orchestration';

/** Adyen's generic refusal ("Refused": soft) in its fake; approved by the three others. */
const REFUSED_AT_ADYEN = '4100000000000027';
/** An amount Checkout.com's fake declines with that response code (20005, do not honour: soft). */
const DO_NOT_HONOUR_AT_CHECKOUT = 20005;

/**
 * Failover across the four real rails in one transaction (docs/routing.md): a route rule lists Stripe,
 * Adyen, Checkout.com and Braintree (each a fake of the vendor on loopback, Adyen's and Checkout.com's behind
 * Prism), and what each answers (a 429: nothing done; a soft decline) sends the payment to the next, each
 * attempt under its own reference and idempotency key, until one authorizes. At most one vendor holds an
 * authorization.
 */
describe('failover across Stripe, Adyen, Checkout.com and Braintree', () => {
  let t: TestApp;
  let key: string;
  const rails = new FourRails();
  const fakes = rails.fakes;
  const ids = {} as Record<Rail, string>;
  /** The one route rule: the connections in this order (the previous rule deleted). */
  const route = oneRouteRule(ids);

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
    const attempts = await namedAttempts(t, key, tx.id, ids);
    return { tx, attempts: attempts.map((a) => [a.number, a.connection, a.status, a.error_code]) };
  };

  beforeAll(async () => {
    const app = await rails.startWithApp('four rails');
    ({ t, key } = app);
    Object.assign(ids, app.ids);
  }, 90_000);
  afterAll(() => rails.close());

  it('Stripe 429, Adyen refuses (soft), Checkout.com 429: Braintree authorizes as attempt 4', async () => {
    await route(t, key, ['stripe', 'adyen', 'checkout', 'braintree']);
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
    await route(t, key, ['braintree', 'checkout', 'adyen', 'stripe']);
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
