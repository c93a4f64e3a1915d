import request from 'supertest';
import { BraintreeProcessor } from '../src/modules/orchestration/processors/braintree/braintree.processor';
import { ProcessorRegistry } from '../src/modules/orchestration/processors/processor.registry';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from './support/app';
import { BRAINTREE_CARDS, FakeBraintree } from './support/fake-braintree';
import { ORCHESTRATION_PERMISSIONS, settleOwn, waitForConnection } from './support/orchestration';

type Tx = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PUBLIC_KEY = 'bt_public_test';
const PRIVATE_KEY = 'bt_private_test';
const FIELDS = [
  { key: 'merchant_id', value: 'fake_merchant' },
  { key: 'merchant_account_id', value: 'usd_account' },
  { key: 'public_key', value: PUBLIC_KEY },
  { key: 'private_key', value: PRIVATE_KEY },
];

describe('braintree-card against a fake Braintree executing Braintree’s GraphQL schema (environment test)', () => {
  let fake: FakeBraintree;
  let t: TestApp;
  let key: string;
  let connection: string;

  const createConnection = (apiKey: string, fields = FIELDS) =>
    request(t.http)
      .post('/orchestration/connections')
      .set('BT-API-KEY', apiKey)
      .send({
        connection_formula_id: 'braintree-card',
        method: 'card',
        display_name: 'Braintree test',
        fields,
        accepted_countries: ['US'],
        accepted_currencies: ['USD'],
        environment: 'test',
      });
  const cardToken = async (apiKey: string, number: string, cvc?: string): Promise<string> =>
    (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', apiKey)
        .send({
          type: 'card',
          data: { number, expiration_month: 3, expiration_year: 2030, ...(cvc ? { cvc } : {}) },
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
          token: await cardToken(key, number, cvc),
          ...extra,
        })
        .expect(201)
    ).body as Tx;
  const op = (id: string, what: string, body: Record<string, unknown> = {}, apiKey = key) =>
    request(t.http).post(`/orchestration/transactions/${id}/${what}`).set('BT-API-KEY', apiKey).send(body);
  const get = async (id: string): Promise<Tx> =>
    (await request(t.http).get(`/orchestration/transactions/${id}`).set('BT-API-KEY', key).expect(200)).body;
  const sent = (operation: string) => fake.calls(operation).at(-1)!.variables.input as Tx;
  const processor = () =>
    t.app
      .get(ProcessorRegistry)
      .for({ formulaId: 'braintree-card', environment: 'test' }) as BraintreeProcessor;
  /** The settlement job `seconds` from now. */
  const settleAfter = (seconds: number) => settleOwn(t, { after: seconds });

  beforeAll(async () => {
    fake = await new FakeBraintree().start();
    t = await startApp({
      VENDOR_BASE_URLS: `braintree-card=${fake.baseUrl}`,
      PUBLIC_BASE_URL: 'https://vault.example',
    });
    const tenant = await newTenant(t, 'braintree');
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    const res = await createConnection(key).expect(201);
    connection = res.body.id;
    expect(await waitForConnection(t, key, connection)).toBe('available');
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    fake.faultOn = /./;
  });
  afterEach(() => {
    // Every document and every variable the adapter sent was valid against Braintree's schema.
    expect(fake.invalid).toEqual([]);
  });

  it('verifies the keys with an authenticated viewer query; refused keys, another merchant or an unknown merchant account fail the connection', async () => {
    const bad = await createConnection(key, [
      ...FIELDS.slice(0, 3),
      { key: 'private_key', value: 'wrong' },
    ]).expect(201);
    expect(await waitForConnection(t, key, bad.body.id)).toBe('failed');
    const check = fake.calls('ViewerWithAccount').at(-1)!;
    expect(check.variables).toEqual({ merchantAccountId: 'usd_account' });
    expect(check.headers.authorization).toBe(
      `Basic ${Buffer.from(`${PUBLIC_KEY}:wrong`).toString('base64')}`,
    );
    expect(String(check.headers['braintree-version']) >= '2019-01-01').toBe(true);
    const other = await createConnection(key, [
      { key: 'merchant_id', value: 'someone_else' },
      ...FIELDS.slice(1),
    ]);
    expect(await waitForConnection(t, key, other.body.id)).toBe('failed');
    const noAccount = await createConnection(key, [
      ...FIELDS.filter((f) => f.key !== 'merchant_account_id'),
      { key: 'merchant_account_id', value: 'gbp_account' },
    ]);
    expect(await waitForConnection(t, key, noAccount.body.id)).toBe('failed');
    const without = await createConnection(
      key,
      FIELDS.filter((f) => f.key !== 'merchant_account_id'),
    );
    expect(await waitForConnection(t, key, without.body.id)).toBe('available');
    expect(fake.calls('Viewer')).toHaveLength(1);
    const shown = await request(t.http)
      .get(`/orchestration/connections/${other.body.id}`)
      .set('BT-API-KEY', key);
    expect(JSON.stringify(shown.body)).not.toContain(PRIVATE_KEY);
  });

  it('authorize: tokenizeCreditCard (never vaulted), then authorizePaymentMethod with the attempt’s orderId', async () => {
    const tx = await pay(BRAINTREE_CARDS.visa);
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      cvv_response_code: 'match',
      authorized_amount: 1299,
    });
    expect(fake.requests.map((r) => r.operationName)).toEqual([
      'TokenizeCreditCard',
      'AuthorizePaymentMethod',
    ]);
    expect(sent('TokenizeCreditCard')).toEqual({
      creditCard: { number: BRAINTREE_CARDS.visa, expirationMonth: '03', expirationYear: '2030', cvv: '123' },
    });
    const input = sent('AuthorizePaymentMethod');
    expect(input.paymentMethodId).toMatch(/^tokencc_/);
    expect(input.transaction).toEqual({
      amount: '12.99',
      orderId: tx.reconciliation_id,
      merchantAccountId: 'usd_account',
    });
    expect(fake.requests.every((r) => !/vaultPaymentMethod/.test(r.query))).toBe(true);
    const at = fake.transactions.get(tx.connection_transaction_id)!;
    expect(at).toMatchObject({ status: 'AUTHORIZED', orderId: tx.reconciliation_id });
    expect(tx.scheme_transaction_id).toBe(at.paymentMethodSnapshot.networkTransactionId);
  });

  it('capture (partial) is submitted for settlement; once settled, refunds (partial) follow; before, a refund fails', async () => {
    const tx = await pay(BRAINTREE_CARDS.mastercard);
    const captured = await op(tx.id, 'capture', { amount: 900 }).expect(200);
    expect(captured.body).toMatchObject({ status: 'capture_succeeded', captured_amount: 900 });
    expect(sent('CaptureTransaction')).toEqual({
      transactionId: tx.connection_transaction_id,
      transaction: { amount: '9.00' },
    });
    // Braintree refunds only settled transactions (91506): the refund fails, nothing is refunded.
    expect((await op(tx.id, 'refunds', { amount: 100 }).expect(201)).body.status).toBe('failed');
    fake.settle(tx.connection_transaction_id);
    const refund = await op(tx.id, 'refunds', { amount: 400 }).expect(201);
    expect(refund.body).toMatchObject({ status: 'succeeded', amount: 400 });
    const input = sent('RefundTransaction');
    expect(input).toMatchObject({ transactionId: tx.connection_transaction_id, refund: { amount: '4.00' } });
    expect(String(input.refund.orderId)).toMatch(new RegExp(`^${tx.reconciliation_id}\\.[0-9A-Za-z]+$`));
    expect((await get(tx.id)).refunded_amount).toBe(400);
    expect(fake.transactions.get(tx.connection_transaction_id)!.refunded).toBe(400);
  });

  it('void reverses an authorization (VOIDED); intent capture is chargePaymentMethod, captured at once', async () => {
    const tx = await pay(BRAINTREE_CARDS.visa);
    expect((await op(tx.id, 'void').expect(200)).body.status).toBe('authorization_voided');
    expect(sent('ReverseTransaction')).toEqual({ transactionId: tx.connection_transaction_id });
    expect(fake.transactions.get(tx.connection_transaction_id)!.status).toBe('VOIDED');
    const charged = await pay(BRAINTREE_CARDS.amex, { intent: 'capture' }, '1234');
    expect(charged).toMatchObject({ status: 'capture_succeeded', captured_amount: 1299 });
    expect(sent('ChargePaymentMethod').transaction.orderId).toBe(charged.reconciliation_id);
    expect(fake.transactions.get(charged.connection_transaction_id)!.status).toBe('SUBMITTED_FOR_SETTLEMENT');
  });

  it('merchant-initiated payments carry paymentInitiator RECURRING or UNSCHEDULED, without the CVC', async () => {
    let first: Tx | undefined;
    const initiator = async (extra: Record<string, unknown>) => {
      const tx = await pay(BRAINTREE_CARDS.visa, extra);
      expect(tx.status).toBe('authorization_succeeded');
      first ??= tx;
      const input = sent('AuthorizePaymentMethod');
      return [input.transaction.paymentInitiator, sent('TokenizeCreditCard').creditCard.cvv];
    };
    expect(await initiator({ payment_source: 'recurring' })).toEqual(['RECURRING_FIRST', '123']);
    // The first payment's network transaction id, as Braintree gave it, is what later ones refer to.
    const later = {
      merchant_initiated: true,
      is_subsequent_payment: true,
      previous_scheme_transaction_id: first!.scheme_transaction_id as string,
    };
    expect(first!.scheme_transaction_id).toMatch(/^[0-9]{15}$/);
    expect(await initiator({ payment_source: 'recurring', ...later })).toEqual(['RECURRING', undefined]);
    expect(await initiator({ payment_source: 'card_on_file', ...later })).toEqual(['UNSCHEDULED', undefined]);
    expect(await initiator({})).toEqual([undefined, '123']);
  });

  it('three_d_secure_data passes as threeDSecurePassThrough; the transaction shows it frictionless', async () => {
    const tx = await pay(BRAINTREE_CARDS.visa, {
      three_d_secure_data: {
        version: '2.2.0',
        eci: '05',
        cavv: 'AAIBBYNoEwAAACcKhAJkdQAAAAA=',
        directory_response: 'y',
        authentication_response: 'Y',
        ds_transaction_id: 'c4e59ceb-a382-4d6a-bc87-385d591fa09d',
      },
    });
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      three_d_secure: { version: '2.2.0', status: 'complete', method: 'frictionless' },
    });
    expect(sent('AuthorizePaymentMethod').transaction.threeDSecurePassThrough).toEqual({
      eciFlag: '05',
      cavv: 'AAIBBYNoEwAAACcKhAJkdQAAAAA=',
      version: '2.2.0',
      directoryServerTransactionId: 'c4e59ceb-a382-4d6a-bc87-385d591fa09d',
      directoryServerResponse: 'Y',
      authenticationResponse: 'Y',
    });
  });

  it.each([
    [BRAINTREE_CARDS.visa, 200000, 'authorization_declined', 'declined', '2000'],
    [BRAINTREE_CARDS.processorDeclined, 1299, 'authorization_declined', 'declined', '2000'],
    [BRAINTREE_CARDS.visa, 200100, 'authorization_declined', 'insufficient_funds', '2001'],
    [BRAINTREE_CARDS.visa, 201300, 'authorization_declined', 'lost_or_stolen', '2013'],
    [BRAINTREE_CARDS.visa, 201400, 'authorization_declined', 'fraudulent', '2014'],
    [BRAINTREE_CARDS.visa, 299900, 'authorization_declined', 'refused_2999', '2999'],
    [BRAINTREE_CARDS.visa, 300000, 'authorization_failed', 'service_error', null],
    [BRAINTREE_CARDS.visa, 500100, 'authorization_declined', 'gateway_rejected_application_incomplete', null],
    [BRAINTREE_CARDS.visa, 500101, 'authorization_declined', 'fraudulent', null],
    // No zero-amount check without vaulting the card at Braintree: refused before any call.
    [BRAINTREE_CARDS.visa, 0, 'authorization_failed', 'zero_amount_unsupported', null],
  ])(
    'card %s, amount %d: %s with %s (legacy code %s)',
    async (card, amount, status, errorCode, legacyCode) => {
      const tx = await pay(card, { amount });
      expect(tx).toMatchObject({ status, error_code: errorCode, auth_response_code: legacyCode });
    },
  );

  it('a number Braintree refuses to tokenize (81715) is a hard invalid_card_number; nothing is authorized', async () => {
    const result = await processor().authorize({
      credentials: Object.fromEntries(FIELDS.map((f) => [f.key, f.value])),
      reconciliationId: 'invalidNumber1',
      attempt: 1,
      amount: 100,
      currency: 'USD',
      country: null,
      intent: 'authorize',
      card: { number: BRAINTREE_CARDS.invalid, expiration_month: 3, expiration_year: 2030 },
      paymentSource: 'ecommerce',
      merchantInitiated: false,
      isSubsequentPayment: false,
      previousSchemeTransactionId: null,
      threeDSessionId: null,
      threeDSecureEnabled: false,
    });
    expect(result).toMatchObject({ outcome: 'declined', errorCode: 'invalid_card_number' });
    expect(fake.calls('AuthorizePaymentMethod')).toHaveLength(0);
  });

  describe('no idempotency key at Braintree: a lost answer is resolved by searching the orderId', () => {
    it('a 5xx after Braintree authorized: found by its orderId at once; one transaction', async () => {
      fake.faultOn = /^AuthorizePaymentMethod$/;
      fake.failAfterNext = 1;
      const tx = await pay(BRAINTREE_CARDS.visa);
      expect(tx.status).toBe('authorization_succeeded');
      expect(fake.calls('TransactionsByOrderId')[0].variables).toEqual({ orderId: tx.reconciliation_id });
      expect(fake.ledger.byOrderId(tx.reconciliation_id)).toHaveLength(1);
      expect(tx.connection_transaction_id).toBe(fake.ledger.byOrderId(tx.reconciliation_id)[0].id);
    });

    it('a time-out while Braintree charged: found by its orderId; nothing is sent twice', async () => {
      processor().timeoutMs = 400;
      fake.faultOn = /^ChargePaymentMethod$/;
      fake.hangNext = 1;
      try {
        const tx = await pay(BRAINTREE_CARDS.visa, { intent: 'capture' });
        expect(tx).toMatchObject({ status: 'capture_succeeded', captured_amount: 1299 });
        expect(fake.calls('ChargePaymentMethod')).toHaveLength(1);
        expect(fake.ledger.byOrderId(tx.reconciliation_id)).toHaveLength(1);
      } finally {
        processor().timeoutMs = 12_000;
      }
    });

    it('the answer and the search both lost: processing; the settlement job finds it within 120 s of the create', async () => {
      fake.faultOn = /^(AuthorizePaymentMethod|TransactionsByOrderId)$/;
      fake.failAfterNext = 2;
      const tx = await pay(BRAINTREE_CARDS.visa);
      expect(tx.status).toBe('processing');
      fake.faultOn = /./;
      await settleAfter(61);
      const made = fake.ledger.byOrderId(tx.reconciliation_id);
      expect(made).toHaveLength(1);
      expect(await get(tx.id)).toMatchObject({
        status: 'authorization_succeeded',
        connection_transaction_id: made[0].id,
      });
      expect(fake.calls('AuthorizePaymentMethod')).toHaveLength(1);
    });

    it('a 5xx before Braintree acted: processing, then failed by settlement when the search finds nothing', async () => {
      fake.faultOn = /^AuthorizePaymentMethod$/;
      fake.failNext = 1;
      const tx = await pay(BRAINTREE_CARDS.visa);
      expect(tx.status).toBe('processing');
      await settleAfter(61);
      expect(await get(tx.id)).toMatchObject({
        status: 'authorization_failed',
        error_code: 'processor_timeout',
      });
      expect(fake.ledger.byOrderId(tx.reconciliation_id)).toHaveLength(0);
    });
  });

  it('another tenant cannot see or touch the transaction', async () => {
    const tx = await pay(BRAINTREE_CARDS.visa);
    const other = await newTenant(t, 'braintree other');
    const otherKey = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    expectProblem(
      await request(t.http).get(`/orchestration/transactions/${tx.id}`).set('BT-API-KEY', otherKey),
      404,
    );
    expectProblem(await op(tx.id, 'capture', {}, otherKey), 404);
    expectProblem(await op(tx.id, 'void', {}, otherKey), 404);
    expect(fake.calls('CaptureTransaction')).toHaveLength(0);
    expect(fake.calls('ReverseTransaction')).toHaveLength(0);
    expect((await get(tx.id)).status).toBe('authorization_succeeded');
  });

  it('card numbers and private keys never reach the logs', () => {
    const logs = t.logs.join('');
    for (const secret of [
      PRIVATE_KEY,
      BRAINTREE_CARDS.visa,
      BRAINTREE_CARDS.mastercard,
      BRAINTREE_CARDS.amex,
    ])
      expect(logs).not.toContain(secret);
  });
});
