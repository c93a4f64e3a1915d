import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { FourRails, type Rail, RAILS } from './support/four-rails';
import { ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { createDatabase, dropDatabase } from './support/test-database';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CARD = { number: '4111111111111111', expiration_month: 12, expiration_year: 2031 };
const BUYER_PERMISSIONS = [
  'orchestration:buyers:create',
  'orchestration:buyers:read',
  'orchestration:buyers:update',
];
const tag = randomBytes(4).toString('hex');

/**
 * Processors' tokens on stored cards (docs/buyers.md, "Connection tokens"), end to end on a database of
 * its own: the PUT's checks (400 naming each field, 403, another tenant), the masked answers, a
 * merchant-initiated payment at each real rail's fake sending the processor's token in the rail's form
 * (Prism checks Adyen's and Checkout.com's requests against their documents, the Braintree fake executes
 * its schema, the Stripe fake holds the PaymentMethod and its customer), the card itself with the
 * mandate's network transaction id after a failover to a rail without a token, and the tokens nowhere in
 * the database dump, the server log or any response (clear, base64 or hex).
 */
describe('connection tokens', () => {
  let db: { name: string; url: string };
  let t: TestApp;
  let key: string;
  let otherKey: string;
  let readOnlyKey: string;
  const rails = new FourRails();
  const fakes = rails.fakes;
  const connections = {} as Record<Rail, string>;
  let otherConnection: string;
  let braintreeVaulted: { id: string; legacyId: string };
  /** The processors' tokens, as each fake holds them: the secrets of the scan. */
  const tokens = {} as Record<Rail, string>;
  const responses: string[] = [];

  const call = async (
    method: 'get' | 'post' | 'put',
    path: string,
    apiKey: string,
    body?: object,
  ): Promise<request.Response> => {
    let req = request(t.http)[method](path).set('BT-API-KEY', apiKey);
    // Payments, and the PUTs (their answers are kept as idempotent answers: the dump holds them too).
    if ((method === 'post' && path === '/orchestration/transactions') || method === 'put')
      req = req.set('BT-IDEMPOTENCY-KEY', randomBytes(12).toString('hex'));
    const res = body ? await req.send(body) : await req;
    responses.push(JSON.stringify(res.headers) + (res.text ?? ''));
    return res;
  };

  /** A buyer with the card stored: its id and the stored card's (the card token's). */
  const buyerWithCard = async (apiKey = key) => {
    const buyer = await call('post', '/orchestration/buyers', apiKey, { display_name: 'Ada' });
    const token = await call('post', '/tokens', apiKey, { type: 'card', data: CARD });
    const stored = await call('post', `/orchestration/buyers/${buyer.body.id}/payment-methods`, apiKey, {
      token: token.body.id,
    });
    expect(stored.status).toBe(201);
    return { buyer: buyer.body.id as string, card: token.body.id as string };
  };

  const entry = (rail: Rail, extra: Json = {}) => ({
    connection_id: connections[rail],
    token: tokens[rail],
    ...(rail === 'stripe' ? { connection_customer: `cus_Mandate${tag}` } : {}),
    ...(rail === 'adyen' ? { connection_customer: `shopper-${tag}` } : {}),
    ...extra,
  });

  const setTokens = (buyer: string, card: string, list: Json[], apiKey = key) =>
    call('put', `/orchestration/buyers/${buyer}/payment-methods/${card}/connection-tokens`, apiKey, {
      connection_tokens: list,
    });

  const renewal = (buyer: string, extra: Json = {}) =>
    call('post', '/orchestration/transactions', key, {
      amount: 1500,
      currency: 'USD',
      buyer_id: buyer,
      payment_source: 'recurring',
      merchant_initiated: true,
      ...extra,
    });

  /** Nothing any vendor's document, schema or package refuses, and nothing the fakes' own checks refuse. */
  const expectNoViolations = () => expect(rails.violations()).toEqual([]);

  beforeAll(async () => {
    db = await createDatabase('vault_test_conntokens');
    await rails.start();
    t = await startApp({
      DATABASE_URL: db.url,
      LOG_LEVEL: 'trace',
      VENDOR_BASE_URLS: rails.vendorBaseUrls,
    });
    const tenant = await newTenant(t, 'connection tokens');
    const permissions = [...ORCHESTRATION_PERMISSIONS, ...BUYER_PERMISSIONS, 'orchestration:flows:update'];
    key = (await newApplication(t, tenant.managementKey, { type: 'private', permissions })).key;
    readOnlyKey = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: [...ORCHESTRATION_PERMISSIONS, 'orchestration:buyers:read'],
      })
    ).key;
    const other = await newTenant(t, 'connection tokens, another tenant');
    otherKey = (await newApplication(t, other.managementKey, { type: 'private', permissions })).key;
    for (const rail of RAILS) connections[rail] = await rails.connect(t, key, rail);
    otherConnection = await rails.connect(t, otherKey, 'stripe');
    // What each processor holds for the card from before the vault.
    tokens.stripe = fakes.stripe.addPaymentMethod(CARD.number, `cus_Mandate${tag}`);
    tokens.adyen = fakes.adyen.storePaymentMethod(`shopper-${tag}`, {
      number: CARD.number,
      expiryMonth: '12',
      expiryYear: '2031',
    });
    tokens.checkout = fakes.checkout.addSource(CARD.number);
    // Braintree's: the legacy token of its vault export (converted with idFromLegacyId before use).
    braintreeVaulted = fakes.braintree.ledger.vault({
      number: CARD.number,
      expirationMonth: '12',
      expirationYear: '2031',
    });
    tokens.braintree = braintreeVaulted.legacyId;
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await rails.close();
    if (db) await dropDatabase(db.name);
  });

  it('refuses a bad list naming each field, and writes nothing', async () => {
    const { buyer, card } = await buyerWithCard();
    const res = await setTokens(buyer, card, [
      entry('stripe', { connection_id: otherConnection }),
      entry('stripe', { token: 'tok_visa' }),
      entry('adyen', { connection_customer: undefined }),
      entry('checkout', { token: 'src_short' }),
      { connection_id: connections.braintree },
    ]);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Object.keys(res.body.errors)).toEqual(['connection_tokens[4].token']);
    const checked = await setTokens(buyer, card, [
      entry('stripe', { connection_id: otherConnection }),
      entry('stripe', { token: 'tok_visa' }),
      entry('adyen', { connection_customer: undefined }),
      entry('checkout', { token: 'src_short' }),
    ]);
    expect(checked.status).toBe(400);
    expect(Object.keys(checked.body.errors).sort()).toEqual([
      'connection_tokens[0].connection_id',
      'connection_tokens[1].token',
      'connection_tokens[2].connection_customer',
      'connection_tokens[3].token',
    ]);
    const listed = await call('get', `/orchestration/buyers/${buyer}/payment-methods`, key);
    expect(listed.body[0].connection_tokens).toEqual([]);
  });

  it('answers the stored card with its tokens masked; another tenant neither sees nor sets them; 403 without buyers:update', async () => {
    const { buyer, card } = await buyerWithCard();
    const res = await setTokens(
      buyer,
      card,
      RAILS.map((rail) => entry(rail, { network_transaction_id: '585011223344556' })),
    );
    expect(res.status).toBe(200);
    expect(res.body.connection_tokens).toEqual(
      RAILS.map((rail) => ({
        connection_id: connections[rail],
        token: `****${tokens[rail].slice(-4)}`,
        connection_customer: entry(rail).connection_customer ?? null,
        network_transaction_id: '585011223344556',
      })),
    );
    const listed = await call('get', `/orchestration/buyers/${buyer}/payment-methods`, key);
    expect(listed.body[0].connection_tokens).toEqual(res.body.connection_tokens);
    // Another tenant: the buyer and its card are unknown to it, to read and to set.
    expect((await call('get', `/orchestration/buyers/${buyer}/payment-methods`, otherKey)).status).toBe(404);
    expect((await setTokens(buyer, card, [], otherKey)).status).toBe(404);
    // ... and this tenant's connection is no connection of the other's.
    const theirs = await buyerWithCard(otherKey);
    const refused = await setTokens(theirs.buyer, theirs.card, [entry('stripe')], otherKey);
    expect(Object.keys(refused.body.errors)).toEqual(['connection_tokens[0].connection_id']);
    expect((await setTokens(buyer, card, [], readOnlyKey)).status).toBe(403);
    const again = await call('get', `/orchestration/buyers/${buyer}/payment-methods`, key);
    expect(again.body[0].connection_tokens).toHaveLength(4);
  });

  it("a merchant-initiated payment at each rail sends the processor's token, in the rail's form", async () => {
    const { buyer, card } = await buyerWithCard();
    expect(
      (
        await setTokens(
          buyer,
          card,
          RAILS.map((rail) => entry(rail)),
        )
      ).status,
    ).toBe(200);
    for (const rail of RAILS) {
      const res = await renewal(buyer, { connection_id: connections[rail] });
      expect({ rail, status: res.body.status }).toEqual({ rail, status: 'authorization_succeeded' });
    }
    const stripe = fakes.stripe.posts(/^\/v1\/payment_intents$/).at(-1)!.body;
    expect(stripe).toMatchObject({
      payment_method: tokens.stripe,
      customer: `cus_Mandate${tag}`,
      off_session: 'true',
      confirm: 'true',
    });
    expect(stripe.payment_method_data).toBeUndefined();
    const adyen = fakes.adyen.posts(/^\/payments$/).at(-1)!.body;
    expect(adyen).toMatchObject({
      paymentMethod: { type: 'scheme', storedPaymentMethodId: tokens.adyen },
      shopperReference: `shopper-${tag}`,
      shopperInteraction: 'ContAuth',
      recurringProcessingModel: 'Subscription',
    });
    expect(adyen.paymentMethod).not.toHaveProperty('number');
    const checkout = fakes.checkout.posts(/^\/payments$/).at(-1)!.body;
    expect(checkout).toMatchObject({
      source: { type: 'id', id: tokens.checkout },
      payment_type: 'Recurring',
      merchant_initiated: true,
    });
    // Braintree: the legacy token converted to its GraphQL id, then authorized; nothing tokenized.
    expect(fakes.braintree.requests.slice(-2)).toMatchObject([
      { operationName: 'PaymentMethodIdFromLegacyId', variables: { legacyId: braintreeVaulted.legacyId } },
      {
        operationName: 'AuthorizePaymentMethod',
        variables: {
          input: { paymentMethodId: braintreeVaulted.id, transaction: { paymentInitiator: 'RECURRING' } },
        },
      },
    ]);
    // A GraphQL id given as the token is authorized as it is.
    await setTokens(buyer, card, [entry('braintree', { token: braintreeVaulted.id })]);
    expect((await renewal(buyer, { connection_id: connections.braintree })).body.status).toBe(
      'authorization_succeeded',
    );
    expect(fakes.braintree.requests.at(-1)).toMatchObject({
      operationName: 'AuthorizePaymentMethod',
      variables: { input: { paymentMethodId: braintreeVaulted.id } },
    });
    expect(fakes.braintree.requests.at(-2)!.operationName).toBe('AuthorizePaymentMethod');
    expectNoViolations();
  });

  it('failed over to a rail without a token, the card goes with the mandate’s network transaction id', async () => {
    const { buyer, card } = await buyerWithCard();
    await setTokens(buyer, card, [entry('stripe', { network_transaction_id: '585099887766554' })]);
    const rule = await call(
      'post',
      '/orchestration/flows/card-transaction/actions/route-transaction/rules',
      key,
      {
        description: 'Stripe, then Adyen',
        conditions: [{ name: 'currency', operator: 'is_one_of', value: ['USD'] }],
        outcome: { type: 'list', result: [connections.stripe, connections.adyen] },
      },
    );
    expect(rule.status).toBe(201);
    fakes.stripe.rateLimitNext = 1;
    const res = await renewal(buyer);
    expect(res.body.status).toBe('authorization_succeeded');
    expect(fakes.stripe.posts(/^\/v1\/payment_intents$/).at(-1)!.body.payment_method).toBe(tokens.stripe);
    const adyen = fakes.adyen.posts(/^\/payments$/).at(-1)!.body;
    expect(adyen.paymentMethod).toMatchObject({
      type: 'scheme',
      number: CARD.number,
      networkPaymentReference: '585099887766554',
    });
    expect(adyen).not.toHaveProperty('shopperReference');
    expectNoViolations();
  });

  it('the tokens are nowhere in the database dump, the server log or any response', async () => {
    const dump = execFileSync('pg_dump', ['--data-only', '--no-owner', db.url], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    expect(dump).toContain('buyer_connection_tokens');
    const logs = t.logs.join('');
    const places = { dump, log: logs, responses: responses.join('\n') };
    const hits: string[] = [];
    for (const [rail, token] of Object.entries({ ...tokens, braintreeGraphQL: braintreeVaulted.id }))
      for (const form of encodings(token))
        for (const [where, text] of Object.entries(places))
          if (text.includes(form)) hits.push(`${rail} token in ${where}`);
    expect(hits).toEqual([]);
    expect(responses.length).toBeGreaterThan(20);
  });
});

/** A secret as it could appear: in clear, base64 (standard and url-safe, at each byte alignment), hex. */
function encodings(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const cores = (alphabet: 'base64' | 'base64url') =>
    [0, 1, 2].map((k) => {
      const encoded = Buffer.concat([Buffer.alloc(k, 0), bytes]).toString(alphabet);
      return encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
    });
  const hex = bytes.toString('hex');
  return [value, ...cores('base64'), ...cores('base64url'), hex, hex.toUpperCase()];
}
