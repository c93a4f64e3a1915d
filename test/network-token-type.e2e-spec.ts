import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';

const RULES = '/orchestration/flows/card-transaction/actions/route-transaction/rules';
const CRYPTOGRAM = 'AgAAAAAABk4DWZ4C28yUQAAAAAA=';
const DPAN = '4895370012003478';

/** A problem naming `field` among its errors. */
function expectField(res: request.Response, status: number, field: string): void {
  expectProblem(res, status);
  expect(Object.keys(res.body.errors ?? {})).toContain(field);
}

/**
 * The `network_token` token type (docs/wallets.md): tokenized by a private key, masked as a card, its
 * cryptogram sealed apart and never shown, revealed or kept past its first authorization; paid at the
 * sandbox; routing skips connections whose formula lacks `network_tokens`.
 */
describe('network tokens', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let key: string;
  let stripe: string;
  let nmi: string;

  beforeAll(async () => {
    t = await startApp();
    db = t.app.get(DataSource);
    tenant = await newTenant(t, 'network tokens');
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: [...ORCHESTRATION_PERMISSIONS, 'orchestration:flows:read', 'orchestration:flows:update'],
      })
    ).key;
    const options = { currencies: ['USD'], countries: ['US'] };
    stripe = (await newConnection(t, key, options)).id;
    nmi = (await newConnection(t, key, { ...options, formulaId: 'nmi-card' })).id;
  });
  afterAll(() => t.close());

  const tokenize = (data: Record<string, unknown>, apiKey = key) =>
    request(t.http).post('/tokens').set('BT-API-KEY', apiKey).send({ type: 'network_token', data });
  const networkToken = async (extra: Record<string, unknown> = {}): Promise<string> =>
    (
      await tokenize({
        number: DPAN,
        expiration_month: 12,
        expiration_year: 2031,
        cryptogram: CRYPTOGRAM,
        eci: '07',
        source: 'apple_pay',
        ...extra,
      }).expect(201)
    ).body.id;
  const retained = async (tokenId: string): Promise<number> =>
    Number(
      (
        await db.query(`SELECT count(*) AS n FROM token_cvcs WHERE tenant_id = $1 AND token_id = $2`, [
          tenant.tenantId,
          tokenId,
        ])
      )[0].n,
    );
  const pay = (body: Record<string, unknown>) =>
    request(t.http)
      .post('/orchestration/transactions')
      .set('BT-API-KEY', key)
      .send({ amount: 1000, currency: 'USD', country: 'US', payment_source: 'ecommerce', ...body });

  it('is masked as a card, shows scheme and source, never its cryptogram; the cryptogram is kept apart', async () => {
    const res = await tokenize({
      number: DPAN,
      expiration_month: 12,
      expiration_year: 2031,
      cryptogram: CRYPTOGRAM,
      eci: '5',
      source: 'merchant',
    }).expect(201);
    expect(res.body).toMatchObject({
      type: 'network_token',
      mask: {
        number: 'XXXXXXXXXXXX3478',
        expiration_month: 12,
        expiration_year: 2031,
        scheme: 'visa',
        source: 'merchant',
      },
      enrichments: { card_details: { bin: '489537', last4: '3478', brand: 'visa' } },
    });
    expect(JSON.stringify(res.body)).not.toContain(CRYPTOGRAM);
    expect(await retained(res.body.id)).toBe(1);
    const read = await request(t.http).get(`/tokens/${res.body.id}`).set('BT-API-KEY', key).expect(200);
    expect(JSON.stringify(read.body)).not.toContain(CRYPTOGRAM);
    expect(JSON.stringify(read.body)).not.toContain(DPAN);
  });

  it('refuses bad data field by field, never repeating a value', async () => {
    const res = await tokenize({
      number: '4895370012003479',
      expiration_month: 13,
      expiration_year: 2031,
      cryptogram: 'not base64!!',
      eci: 'abc',
      source: 'samsung_pay',
      cvc: '123',
    });
    for (const field of ['number', 'expiration_month', 'cryptogram', 'eci', 'source', 'cvc'])
      expectField(res, 400, `data.${field}`);
    expect(JSON.stringify(res.body)).not.toContain('not base64');
    expect(JSON.stringify(res.body)).not.toContain('4895370012003479');
  });

  it('a public key or a session cannot tokenize one directly (only from a wallet payload)', async () => {
    const pub = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const res = await tokenize(
      { number: DPAN, expiration_month: 12, expiration_year: 2031, source: 'merchant' },
      pub.key,
    );
    expectProblem(res, 403);
    const cards = await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', pub.key)
      .send({
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 },
      });
    expect(cards.status).toBe(201);
  });

  it('a reveal shows the number as a card read does, and no cryptogram', async () => {
    const id = await networkToken();
    const reader = await newApplication(t, tenant.managementKey, {
      type: 'private',
      rules: [
        {
          description: 'reveal',
          priority: 1,
          container: '/',
          permissions: ['token:read'],
          transform: 'reveal',
        },
      ],
    });
    const res = await request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', reader.key).expect(200);
    expect(res.body.data).toEqual({
      number: DPAN,
      expiration_month: 12,
      expiration_year: 2031,
      eci: '07',
      scheme: 'visa',
      source: 'apple_pay',
    });
    expect(JSON.stringify(res.body)).not.toContain(CRYPTOGRAM);
  });

  it('pays at the sandbox as a network token; the cryptogram serves the first authorization only', async () => {
    const id = await networkToken();
    const first = await pay({ token: id, connection_id: stripe }).expect(201);
    expect(first.body).toMatchObject({
      status: 'authorization_succeeded',
      payment_method: { method: 'network_token', source: 'apple_pay', label: '3478', scheme: 'visa' },
    });
    expect(await retained(id)).toBe(0);
    const second = await pay({ token: id, connection_id: stripe }).expect(201);
    expect(second.body.status).toBe('authorization_succeeded');
    const listed = await request(t.http)
      .get(`/orchestration/transactions/${first.body.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(listed.body.payment_method).toMatchObject({ method: 'network_token', source: 'apple_pay' });
  });

  it('a connection whose formula lacks network_tokens is refused by name and skipped by routing', async () => {
    const id = await networkToken();
    expectField(await pay({ token: id, connection_id: nmi }), 400, 'token');
    const rule = await request(t.http)
      .post(RULES)
      .set('BT-API-KEY', key)
      .send({ description: 'nmi only', conditions: [], outcome: { type: 'list', result: [nmi] } })
      .expect(201);
    const none = await pay({ token: id });
    expectProblem(none, 400);
    expect(none.body.code).toBe('no_connection_available');
    await request(t.http).delete(`${RULES}/${rule.body.id}`).set('BT-API-KEY', key).expect(204);
    const both = await request(t.http)
      .post(RULES)
      .set('BT-API-KEY', key)
      .send({
        description: 'nmi then stripe',
        conditions: [],
        outcome: { type: 'list', result: [nmi, stripe] },
      })
      .expect(201);
    const routed = await pay({ token: id }).expect(201);
    expect(routed.body.connection.id).toBe(stripe);
    // A card still goes to the first connection.
    const card = await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', key)
      .send({
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 },
      })
      .expect(201);
    expect((await pay({ token: card.body.id }).expect(201)).body.connection.id).toBe(nmi);
    await request(t.http).delete(`${RULES}/${both.body.id}`).set('BT-API-KEY', key).expect(204);
  });

  it('is not stored for a buyer', async () => {
    const id = await networkToken();
    expectField(await pay({ token: id, connection_id: stripe, store: true }), 400, 'store');
  });

  it('another tenant can neither read nor pay with it', async () => {
    const id = await networkToken();
    const other = await newTenant(t, 'other tenant');
    const otherKey = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    await request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', otherKey).expect(404);
    const otherStripe = (await newConnection(t, otherKey, { currencies: ['USD'], countries: ['US'] })).id;
    const res = await request(t.http)
      .post('/orchestration/transactions')
      .set('BT-API-KEY', otherKey)
      .send({ amount: 1000, currency: 'USD', token: id, connection_id: otherStripe });
    expectField(res, 400, 'token');
    expect(await retained(id)).toBe(1);
  });

  it('audit rows name the type and the logs filter selects them', async () => {
    const id = await networkToken();
    const res = await request(t.http)
      .get('/logs')
      .query({ entity_type: 'network_token', entity_id: id })
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(res.body.data.length).toBeGreaterThan(0);
    expect(JSON.stringify(res.body)).not.toContain(CRYPTOGRAM);
  });
});
