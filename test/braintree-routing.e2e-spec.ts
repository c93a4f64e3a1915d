import request from 'supertest';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { BRAINTREE_CARDS, FakeBraintree } from './support/fake-braintree';
import { newConnection, ORCHESTRATION_PERMISSIONS, waitForConnection } from './support/orchestration';

type Tx = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * braintree-card in routing and failover (docs/routing.md), and with buyers' stored cards: a route rule
 * tries Braintree (a fake executing Braintree's schema), then a sandbox connection, or the other way
 * round. Braintree's generic soft declines, its FAILED transactions and its 429s fail over; its hard
 * declines end the transaction; a second attempt at Braintree carries its own orderId.
 */
describe('braintree-card in routing, failover and buyers', () => {
  let fake: FakeBraintree;
  let t: TestApp;
  let key: string;
  let braintree: string;
  let sandbox: string;

  const rule = async (result: string[]) => {
    const rules = '/orchestration/flows/card-transaction/actions/route-transaction/rules';
    const existing = await request(t.http).get(rules).set('BT-API-KEY', key).expect(200);
    for (const old of existing.body as { id: string }[])
      await request(t.http).delete(`${rules}/${old.id}`).set('BT-API-KEY', key).expect(204);
    await request(t.http)
      .post(rules)
      .set('BT-API-KEY', key)
      .send({ description: 'all', conditions: [], outcome: { type: 'list', result } })
      .expect(201);
  };
  const token = async (number: string) =>
    (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({ type: 'card', data: { number, expiration_month: 12, expiration_year: 2030, cvc: '123' } })
        .expect(201)
    ).body.id as string;
  const pay = async (number: string, extra: Record<string, unknown> = {}): Promise<Tx> =>
    (
      await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({ amount: 1500, currency: 'USD', token: await token(number), ...extra })
        .expect(201)
    ).body;
  const attempts = async (id: string) =>
    (
      (
        await request(t.http)
          .get(`/orchestration/transactions/${id}/attempts`)
          .set('BT-API-KEY', key)
          .expect(200)
      ).body as Tx[]
    ).map((a) => [a.number, a.connection.id, a.status, a.error_code]);

  beforeAll(async () => {
    fake = await new FakeBraintree().start();
    t = await startApp({ VENDOR_BASE_URLS: `braintree-card=${fake.baseUrl}` });
    const tenant = await newTenant(t, 'braintree routing');
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: [
          ...ORCHESTRATION_PERMISSIONS,
          'orchestration:flows:read',
          'orchestration:flows:update',
          'orchestration:buyers:read',
          'orchestration:buyers:create',
          'orchestration:buyers:update',
        ],
      })
    ).key;
    const created = await request(t.http)
      .post('/orchestration/connections')
      .set('BT-API-KEY', key)
      .send({
        connection_formula_id: 'braintree-card',
        method: 'card',
        display_name: 'Braintree',
        environment: 'test',
        fields: [
          { key: 'merchant_id', value: 'fake_merchant' },
          { key: 'public_key', value: 'bt_public_test' },
          { key: 'private_key', value: 'bt_private_test' },
        ],
        accepted_countries: ['US'],
        accepted_currencies: ['USD'],
      })
      .expect(201);
    braintree = created.body.id;
    expect(await waitForConnection(t, key, braintree)).toBe('available');
    sandbox = (
      await newConnection(t, key, { formulaId: 'stripe-card', currencies: ['USD'], countries: ['US'] })
    ).id;
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  afterEach(() => {
    fake.faultOn = /./;
    expect(fake.invalid).toEqual([]);
  });

  it('a generic soft decline at Braintree (2000 Do Not Honor) fails over to the next connection', async () => {
    await rule([braintree, sandbox]);
    const tx = await pay(BRAINTREE_CARDS.processorDeclined);
    expect(tx).toMatchObject({ status: 'authorization_succeeded', connection: { id: sandbox } });
    expect(await attempts(tx.id)).toEqual([
      [1, braintree, 'declined', 'declined'],
      [2, sandbox, 'succeeded', null],
    ]);
    expect(fake.ledger.byOrderId(tx.reconciliation_id)[0].status).toBe('PROCESSOR_DECLINED');
  });

  it('FAILED at Braintree (3000, processor network unavailable) and a 429 fail over too', async () => {
    await rule([braintree, sandbox]);
    const failed = await pay(BRAINTREE_CARDS.visa, { amount: 300000 });
    expect(await attempts(failed.id)).toEqual([
      [1, braintree, 'failed', 'service_error'],
      [2, sandbox, 'succeeded', null],
    ]);
    fake.faultOn = /^AuthorizePaymentMethod$/;
    fake.rateLimitNext = 1;
    const limited = await pay(BRAINTREE_CARDS.visa);
    expect(await attempts(limited.id)).toEqual([
      [1, braintree, 'failed', 'processor_unavailable'],
      [2, sandbox, 'succeeded', null],
    ]);
    expect(fake.ledger.byOrderId(limited.reconciliation_id)).toHaveLength(0);
  });

  it('a hard decline at Braintree ends the transaction: the next connection is never tried', async () => {
    await rule([braintree, sandbox]);
    const tx = await pay(BRAINTREE_CARDS.visa, { amount: 200100 });
    expect(tx).toMatchObject({
      status: 'authorization_declined',
      error_code: 'insufficient_funds',
      connection: { id: braintree },
    });
    expect(await attempts(tx.id)).toEqual([[1, braintree, 'declined', 'insufficient_funds']]);
  });

  it('a second attempt at Braintree carries its own orderId (<reconciliation id>.a2)', async () => {
    await rule([sandbox, braintree]);
    const tx = await pay('4000000000000002');
    expect(tx).toMatchObject({ status: 'authorization_succeeded', connection: { id: braintree } });
    const [made] = fake.ledger.byOrderId(`${tx.reconciliation_id}.a2`);
    expect(made).toMatchObject({ status: 'AUTHORIZED', id: tx.connection_transaction_id });
    expect(fake.ledger.byOrderId(tx.reconciliation_id)).toHaveLength(0);
  });

  it("a buyer's stored card, charged merchant-initiated by buyer alone, is UNSCHEDULED without its CVC", async () => {
    const buyer = await request(t.http)
      .post('/orchestration/buyers')
      .set('BT-API-KEY', key)
      .send({ external_identifier: `bt-buyer-${Date.now()}` })
      .expect(201);
    await request(t.http)
      .post(`/orchestration/buyers/${buyer.body.id}/payment-methods`)
      .set('BT-API-KEY', key)
      .send({ token: await token(BRAINTREE_CARDS.mastercard) })
      .expect(201);
    const tx = (
      await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({
          amount: 800,
          currency: 'USD',
          connection_id: braintree,
          buyer_id: buyer.body.id,
          merchant_initiated: true,
        })
        .expect(201)
    ).body as Tx;
    expect(tx).toMatchObject({ status: 'authorization_succeeded', buyer: { id: buyer.body.id } });
    const authorized = fake.calls('AuthorizePaymentMethod').at(-1)!.variables.input;
    expect(authorized.transaction).toMatchObject({ amount: '8.00', paymentInitiator: 'UNSCHEDULED' });
    expect(fake.calls('TokenizeCreditCard').at(-1)!.variables.input.creditCard.cvv).toBeUndefined();
  });
});
