import request from 'supertest';
import type { TestApp } from './support/app';
import { FourRails, type Rail } from './support/four-rails';
import { namedAttempts, newConnection, oneRouteRule } from './support/orchestration';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const VISA_DPAN = '4895370012003478';
const MASTERCARD_DPAN = '5204245250001488';
/** A fresh cryptogram for each token (base64 of 20 bytes, as the wallets give it). */
let cryptograms = 0;
const newCryptogram = () =>
  Buffer.from(`nt-cryptogram-${String(++cryptograms).padStart(6, '0')}`).toString('base64');
type Source = 'apple_pay' | 'google_pay' | 'merchant';

/**
 * Network tokens (docs/vendors.md, "Network tokens") paid at each real rail's fake and at the sandbox: the
 * DPAN, its expiry, the cryptogram and the ECI reach the vendor in its network-token form (Prism checks
 * Adyen's and Checkout.com's requests against their documents, the Braintree fake executes its schema, the
 * Stripe fake refuses parameters the `stripe` package does not declare), a second payment with the same
 * token sends no cryptogram, routing skips a formula without `network_tokens`, and an Apple Pay token fails
 * over from one rail to another.
 */
describe('network tokens at every rail', () => {
  let t: TestApp;
  let key: string;
  const rails = new FourRails();
  const fakes = rails.fakes;
  const ids: Record<Rail | 'sandbox' | 'without', string> = {
    stripe: '',
    adyen: '',
    checkout: '',
    braintree: '',
    sandbox: '',
    without: '',
  };

  /** A `network_token` token made by the private key (the merchant's own, or a wallet's as decrypted). */
  const networkToken = async (
    source: Source,
    number: string,
    extra: { cryptogram?: string | null; eci?: string } = {},
  ) => {
    const cryptogram = extra.cryptogram === undefined ? newCryptogram() : extra.cryptogram;
    const res = await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', key)
      .send({
        type: 'network_token',
        data: {
          number,
          expiration_month: 9,
          expiration_year: 2031,
          source,
          ...(cryptogram === null ? {} : { cryptogram }),
          ...(extra.eci ? { eci: extra.eci } : {}),
        },
      })
      .expect(201);
    expect(JSON.stringify(res.body)).not.toContain(String(cryptogram));
    return { id: res.body.id as string, cryptogram: cryptogram ?? '' };
  };

  const pay = async (token: string, connection?: string, amount = 1250) =>
    (
      await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({ amount, currency: 'USD', token, ...(connection ? { connection_id: connection } : {}) })
        .expect(201)
    ).body as Json;

  const attemptsOf = async (id: string) =>
    (await namedAttempts(t, key, id, ids)).map((a) => [a.number, a.connection, a.status]);
  /** The one route rule: the connections in this order (the previous rule deleted). */
  const route = oneRouteRule(ids);

  /** What the rail received last for an authorization, as the vendor sees a payment instrument. */
  const received: Record<Rail, () => Json> = {
    checkout: () => fakes.checkout.posts(/^\/payments$/).at(-1)!.body,
    adyen: () => fakes.adyen.requests.filter((r) => r.path === '/payments').at(-1)!.body,
    stripe: () => fakes.stripe.posts(/^\/v1\/payment_intents$/).at(-1)!.body,
    braintree: () => fakes.braintree.requests.filter((r) => /^Tokenize/.test(r.operationName ?? '')).at(-1)!,
  };

  /** Nothing any vendor's document, schema or package refuses, and nothing the fakes' own checks refuse. */
  const expectNoViolations = () => expect(rails.violations()).toEqual([]);

  beforeAll(async () => {
    const app = await rails.startWithApp('network tokens');
    ({ t, key } = app);
    Object.assign(ids, app.ids);
    // Simulated formulas: cybersource-card takes network tokens, nmi-card does not.
    const sandbox = { currencies: ['USD'], countries: ['US'] };
    ids.sandbox = (await newConnection(t, key, { formulaId: 'cybersource-card', ...sandbox })).id;
    ids.without = (await newConnection(t, key, { formulaId: 'nmi-card', ...sandbox })).id;
  }, 90_000);
  afterAll(() => rails.close());

  /** Each rail's network-token form with the cryptogram, and its form for the same DPAN without one. */
  const forms: Record<
    Rail,
    { source: Source; dpan: string; eci?: string; first: (c: string) => Json; later: () => Json }
  > = {
    checkout: {
      source: 'apple_pay',
      dpan: VISA_DPAN,
      eci: '05',
      first: (cryptogram) => ({
        source: {
          type: 'network_token',
          token: VISA_DPAN,
          expiry_month: 9,
          expiry_year: 2031,
          token_type: 'applepay',
          cryptogram,
          eci: '05',
        },
        '3ds': { enabled: false },
      }),
      later: () => ({ source: { type: 'card', number: VISA_DPAN, stored: true } }),
    },
    adyen: {
      source: 'google_pay',
      dpan: MASTERCARD_DPAN,
      eci: '02',
      first: (cryptogram) => ({
        paymentMethod: {
          type: 'networkToken',
          number: MASTERCARD_DPAN,
          expiryMonth: '09',
          expiryYear: '2031',
          brand: 'mc',
        },
        mpiData: {
          tokenAuthenticationVerificationValue: cryptogram,
          eci: '02',
          directoryResponse: 'Y',
          authenticationResponse: 'Y',
        },
        shopperInteraction: 'Ecommerce',
      }),
      later: () => ({
        paymentMethod: { type: 'networkToken', number: MASTERCARD_DPAN },
        shopperInteraction: 'ContAuth',
        recurringProcessingModel: 'CardOnFile',
      }),
    },
    braintree: {
      source: 'merchant',
      dpan: VISA_DPAN,
      eci: '07',
      first: (cryptogram) => ({
        operationName: 'TokenizeNetworkToken',
        variables: {
          input: {
            networkToken: {
              number: VISA_DPAN,
              expirationMonth: '09',
              expirationYear: '2031',
              cryptogram,
              eCommerceIndicator: '07',
              originDetails: { origin: 'NETWORK_TOKEN' },
            },
          },
        },
      }),
      later: () => ({
        operationName: 'TokenizeCreditCard',
        variables: { input: { creditCard: { number: VISA_DPAN, expirationMonth: '09' } } },
      }),
    },
    stripe: {
      source: 'apple_pay',
      dpan: VISA_DPAN,
      first: () => ({
        payment_method_data: { type: 'card', card: { number: VISA_DPAN, exp_month: '9', exp_year: '2031' } },
        payment_method_options: { card: { network: 'visa' } },
      }),
      later: () => ({ payment_method_data: { card: { number: VISA_DPAN } } }),
    },
  };

  it.each(Object.keys(forms) as Rail[])(
    '%s: the network-token form with the cryptogram, then the same token without it',
    async (rail) => {
      const form = forms[rail];
      const token = await networkToken(form.source, form.dpan, { eci: form.eci });
      const first = await pay(token.id, ids[rail]);
      expect(first).toMatchObject({
        status: 'authorization_succeeded',
        connection: { id: ids[rail] },
        payment_method: { method: 'network_token', source: form.source },
      });
      expect(received[rail]()).toMatchObject(form.first(token.cryptogram));
      const second = await pay(token.id, ids[rail]);
      expect(second).toMatchObject({
        status: 'authorization_succeeded',
        payment_method: { method: 'network_token' },
      });
      const later = received[rail]();
      expect(later).toMatchObject(form.later());
      expect(JSON.stringify(later)).not.toContain(token.cryptogram);
      expect(JSON.stringify(later)).not.toMatch(
        /cryptogram|tokenAuthenticationVerificationValue|"cvv"|"cvc"/,
      );
      expectNoViolations();
    },
  );

  it("checkout: a merchant's Mastercard token is mdes, a Visa one vts", async () => {
    for (const [dpan, tokenType] of [
      [MASTERCARD_DPAN, 'mdes'],
      [VISA_DPAN, 'vts'],
    ]) {
      const token = await networkToken('merchant', dpan, { eci: '02' });
      expect((await pay(token.id, ids.checkout)).status).toBe('authorization_succeeded');
      expect(received.checkout().source).toMatchObject({
        type: 'network_token',
        token: dpan,
        token_type: tokenType,
        cryptogram: token.cryptogram,
      });
    }
    expectNoViolations();
  });

  it('the sandbox follows its test card table by the DPAN', async () => {
    const approved = await pay((await networkToken('apple_pay', '4242424242424242')).id, ids.sandbox);
    expect(approved).toMatchObject({
      status: 'authorization_succeeded',
      payment_method: { method: 'network_token' },
    });
    const declined = await pay((await networkToken('google_pay', '4000000000009995')).id, ids.sandbox);
    expect(declined).toMatchObject({ status: 'authorization_declined', error_code: 'insufficient_funds' });
  });

  it('routing skips a formula without network_tokens; none left: no_connection_available', async () => {
    await route(t, key, ['without', 'sandbox']);
    const skipped = await pay((await networkToken('apple_pay', '4242424242424242')).id);
    expect(skipped).toMatchObject({ status: 'authorization_succeeded', connection: { id: ids.sandbox } });
    expect(await attemptsOf(skipped.id)).toEqual([[1, 'sandbox', 'succeeded']]);
    // A card token is not skipped there.
    const card = (
      await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', key)
        .send({
          type: 'card',
          data: { number: '4242424242424242', expiration_month: 9, expiration_year: 2031 },
        })
        .expect(201)
    ).body.id as string;
    expect((await pay(card)).connection.id).toBe(ids.without);

    await route(t, key, ['without']);
    const none = await request(t.http)
      .post('/orchestration/transactions')
      .set('BT-API-KEY', key)
      .send({ amount: 1250, currency: 'USD', token: (await networkToken('apple_pay', VISA_DPAN)).id })
      .expect(400);
    expect(none.body.code).toBe('no_connection_available');
  });

  it('an Apple Pay token fails over from Checkout.com (soft decline) to Adyen, which gets the cryptogram', async () => {
    await route(t, key, ['checkout', 'adyen']);
    const token = await networkToken('apple_pay', VISA_DPAN, { eci: '05' });
    const tx = await pay(token.id, undefined, 20005);
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      connection: { id: ids.adyen },
      payment_method: { method: 'network_token' },
    });
    expect(await attemptsOf(tx.id)).toEqual([
      [1, 'checkout', 'declined'],
      [2, 'adyen', 'succeeded'],
    ]);
    expect(fakes.checkout.payment(tx.reconciliation_id)?.request.source).toMatchObject({
      type: 'network_token',
      token_type: 'applepay',
      cryptogram: token.cryptogram,
    });
    expect(received.adyen()).toMatchObject({
      reference: `${tx.reconciliation_id}.a2`,
      paymentMethod: { type: 'networkToken', number: VISA_DPAN, brand: 'visa' },
      mpiData: { tokenAuthenticationVerificationValue: token.cryptogram, eci: '05' },
    });
    expectNoViolations();
  });
});
