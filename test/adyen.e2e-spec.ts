import request from 'supertest';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { AdyenProcessor } from '../src/modules/orchestration/processors/adyen/adyen.processor';
import { ProcessorRegistry } from '../src/modules/orchestration/processors/processor.registry';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from './support/app';
import { ADYEN_CARDS, FakeAdyen, NotificationItem, signNotification } from './support/fake-adyen';
import { ORCHESTRATION_PERMISSIONS, settleOwn, waitForConnection } from './support/orchestration';
import { PrismProxy, startPrismProxy } from './support/prism';

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const OTHER_HMAC_KEY = 'A1'.repeat(32);
const API_KEY = 'adyen_test_key';
/** How long the test app lets an operation wait for its notification. */
const NOTIFICATION_TIMEOUT_S = 120;

type Tx = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('adyen-card against a fake Adyen behind Prism (Checkout v71, environment test)', () => {
  let fake: FakeAdyen;
  let prism: PrismProxy;
  let t: TestApp;
  let notifyUrl: string;
  let key: string;
  let connection: string;

  const createConnection = (apiKey: string, body: Record<string, unknown> = {}, fields?: unknown[]) =>
    request(t.http)
      .post('/orchestration/connections')
      .set('BT-API-KEY', apiKey)
      .send({
        connection_formula_id: 'adyen-card',
        method: 'card',
        display_name: 'Adyen test',
        fields: fields ?? [
          { key: 'api_key', value: API_KEY },
          { key: 'merchant_account', value: 'TestMerchant' },
          { key: 'hmac_key', value: HMAC_KEY },
        ],
        accepted_countries: ['NL', 'US'],
        accepted_currencies: ['EUR', 'USD'],
        environment: 'test',
        ...body,
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
  const pay = async (
    number: string,
    extra: Record<string, unknown> = {},
    cvc: string | undefined = '737',
    as = { key: () => key, connection: () => connection },
  ): Promise<Tx> =>
    (
      await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', as.key())
        .send({
          amount: 1299,
          currency: 'EUR',
          connection_id: as.connection(),
          token: await cardToken(as.key(), number, cvc),
          ...extra,
        })
        .expect(201)
    ).body;
  const op = (id: string, what: string, body: Record<string, unknown> = {}) =>
    request(t.http).post(`/orchestration/transactions/${id}/${what}`).set('BT-API-KEY', key).send(body);
  const get = async (id: string, apiKey = key): Promise<Tx> =>
    (await request(t.http).get(`/orchestration/transactions/${id}`).set('BT-API-KEY', apiKey).expect(200))
      .body;
  const refundsOf = async (id: string): Promise<Tx[]> =>
    (
      await request(t.http)
        .get(`/orchestration/transactions/${id}/refunds`)
        .set('BT-API-KEY', key)
        .expect(200)
    ).body.data;
  /** Sends every queued notification (or `items`), signed with the connection's key. */
  const notify = async (options: { items?: NotificationItem[]; key?: string; tamper?: boolean } = {}) =>
    fake.sendNotifications(notifyUrl, options.key ?? HMAC_KEY, options);
  const queuedFor = (psp: string) =>
    fake.queued.filter((item) => item.pspReference === psp || item.originalReference === psp);
  const processor = () =>
    t.app.get(ProcessorRegistry).for({ formulaId: 'adyen-card', environment: 'test' }) as AdyenProcessor;
  const unanswered = async <T>(work: () => Promise<T>): Promise<T> => {
    processor().timeoutMs = 400;
    fake.hangNext = 1;
    try {
      return await work();
    } finally {
      processor().timeoutMs = 20_000;
    }
  };
  /** The settlement job `seconds` from now. */
  const settleAfter = (seconds: number) => settleOwn(t, { after: seconds });
  const auditMessages = async (id: string): Promise<string[]> => {
    const res = await request(t.http)
      .get(`/logs?entity_type=transaction&entity_id=${id}`)
      .set('BT-API-KEY', managementKey)
      .expect(200);
    return (res.body.data as { message: string }[]).map((row) => row.message);
  };
  let managementKey: string;

  beforeAll(async () => {
    fake = await new FakeAdyen().start();
    prism = await startPrismProxy(fake.baseUrl);
    t = await startApp({
      VENDOR_BASE_URLS: `adyen-card=${prism.baseUrl}`,
      PUBLIC_BASE_URL: 'https://vault.example',
      VENDOR_NOTIFICATION_TIMEOUT_SECONDS: String(NOTIFICATION_TIMEOUT_S),
    });
    await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', resolve));
    notifyUrl = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}/orchestration/vendors/adyen/notifications`;
    const tenant = await newTenant(t);
    managementKey = tenant.managementKey;
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    const res = await createConnection(key).expect(201);
    expect(res.body.environment).toBe('test');
    connection = res.body.id;
    expect(await waitForConnection(t, key, connection)).toBe('available');
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await prism.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });
  afterEach(() => {
    // Every request the adapter sent, and every answer of the fake, matched Adyen's own document.
    expect(prism.violations()).toEqual([]);
  });

  it('verifies the credentials with POST /paymentMethods; a refused key or merchant account fails the connection', async () => {
    const bad = await createConnection(key, {}, [
      { key: 'api_key', value: 'adyen_unknown_key' },
      { key: 'merchant_account', value: 'TestMerchant' },
    ]).expect(201);
    expect(await waitForConnection(t, key, bad.body.id)).toBe('failed');
    const check = fake.posts(/^\/paymentMethods$/)[0];
    expect(check.headers['x-api-key']).toBe('adyen_unknown_key');
    expect(check.body).toEqual({ merchantAccount: 'TestMerchant' });
    const otherAccount = await createConnection(key, {}, [
      { key: 'api_key', value: API_KEY },
      { key: 'merchant_account', value: 'SomeoneElse' },
    ]).expect(201);
    expect(await waitForConnection(t, key, otherAccount.body.id)).toBe('failed');
    const formula = await request(t.http)
      .get('/orchestration/connections/' + otherAccount.body.id)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(JSON.stringify(formula.body)).not.toContain(API_KEY);
  });

  it('three_d_secure_data goes to Adyen as mpiData (Prism checks it against the document); the transaction shows it frictionless', async () => {
    const tx = await pay(ADYEN_CARDS.visa, {
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
    const [post] = fake.posts(/^\/payments$/);
    expect(post.body.mpiData).toEqual({
      cavv: 'AAIBBYNoEwAAACcKhAJkdQAAAAA=',
      eci: '05',
      threeDSVersion: '2.2.0',
      dsTransID: 'c4e59ceb-a382-4d6a-bc87-385d591fa09d',
      directoryResponse: 'Y',
      authenticationResponse: 'Y',
    });
  });

  it('authorize: one POST /payments with raw card data, manual capture, our reference and an Idempotency-Key', async () => {
    const tx = await pay(ADYEN_CARDS.visa);
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      cvv_response_code: 'match',
      authorized_amount: 1299,
      error_code: null,
    });
    const [post] = fake.posts(/^\/payments$/);
    expect(post.headers['idempotency-key']).toBe(`${tx.reconciliation_id}:authorize`);
    expect(post.headers['x-api-key']).toBe(API_KEY);
    expect(post.headers['content-type']).toBe('application/json');
    expect(post.body).toEqual({
      amount: { value: 1299, currency: 'EUR' },
      merchantAccount: 'TestMerchant',
      reference: tx.reconciliation_id,
      returnUrl: `https://vault.example/orchestration/approvals/return/${tx.reconciliation_id}`,
      paymentMethod: {
        type: 'scheme',
        number: ADYEN_CARDS.visa,
        expiryMonth: '03',
        expiryYear: '2030',
        cvc: '737',
      },
      shopperInteraction: 'Ecommerce',
      additionalData: { manualCapture: 'true' },
      authenticationData: { threeDSRequestData: { nativeThreeDS: 'disabled' } },
    });
    expect(tx.connection_transaction_id).toBe(fake.payment(tx.reconciliation_id)!.pspReference);
    expect(tx.scheme_transaction_id).toMatch(/^\d+$/);
  });

  it('the first customer-initiated card_on_file or recurring payment is Ecommerce with its CVC; a merchant-initiated or later one is ContAuth without', async () => {
    const sent = async (extra: Record<string, unknown>) => {
      const before = fake.posts(/^\/payments$/).length;
      const tx = await pay(ADYEN_CARDS.visa, extra);
      expect(tx.status).toBe('authorization_succeeded');
      const { shopperInteraction, recurringProcessingModel, storePaymentMethod, paymentMethod } = fake.posts(
        /^\/payments$/,
      )[before].body as Tx;
      return {
        tx,
        body: {
          shopperInteraction,
          recurringProcessingModel,
          storePaymentMethod,
          cvc: paymentMethod.cvc,
          networkPaymentReference: paymentMethod.networkPaymentReference,
        },
      };
    };
    // The buyer is there and gives the card: Ecommerce, with the CVC the token holds.
    const onFile = await sent({ payment_source: 'card_on_file' });
    expect(onFile.body).toEqual({
      shopperInteraction: 'Ecommerce',
      recurringProcessingModel: 'CardOnFile',
      storePaymentMethod: undefined,
      cvc: '737',
      networkPaymentReference: undefined,
    });
    expect(onFile.tx.cvv_response_code).toBe('match');
    const subscription = await sent({ payment_source: 'recurring' });
    expect(subscription.body).toEqual({
      shopperInteraction: 'Ecommerce',
      recurringProcessingModel: 'Subscription',
      storePaymentMethod: undefined,
      cvc: '737',
      networkPaymentReference: undefined,
    });
    // The renewals, started by the merchant: ContAuth, no CVC (although the new token still holds one),
    // the first payment's scheme transaction id.
    const renewal = await sent({
      payment_source: 'recurring',
      merchant_initiated: true,
      is_subsequent_payment: true,
      previous_scheme_transaction_id: subscription.tx.scheme_transaction_id,
    });
    expect(renewal.body).toEqual({
      shopperInteraction: 'ContAuth',
      recurringProcessingModel: 'Subscription',
      storePaymentMethod: undefined,
      cvc: undefined,
      networkPaymentReference: subscription.tx.scheme_transaction_id,
    });
    expect(renewal.tx.cvv_response_code).toBe('not_provided');
    const topUp = await sent({ payment_source: 'card_on_file', merchant_initiated: true });
    expect(topUp.body).toMatchObject({
      shopperInteraction: 'ContAuth',
      recurringProcessingModel: 'UnscheduledCardOnFile',
      cvc: undefined,
    });
    // A later payment the buyer makes with the card on file: ContAuth, no CVC.
    const later = await sent({
      payment_source: 'card_on_file',
      is_subsequent_payment: true,
      previous_scheme_transaction_id: onFile.tx.scheme_transaction_id,
    });
    expect(later.body).toMatchObject({
      shopperInteraction: 'ContAuth',
      recurringProcessingModel: 'CardOnFile',
      cvc: undefined,
    });
  });

  it('capture (partial) answers capture_pending; the CAPTURE notification settles it; refunds likewise', async () => {
    const tx = await pay(ADYEN_CARDS.visa);
    fake.queued.length = 0;
    const captured = await op(tx.id, 'capture', { amount: 900 }).expect(200);
    expect(captured.body.status).toBe('capture_pending');
    const [capture] = fake.posts(/\/captures$/);
    expect(capture.path).toBe(`/payments/${tx.connection_transaction_id}/captures`);
    expect(capture.headers['idempotency-key']).toBe(`${tx.reconciliation_id}:capture`);
    expect(capture.body).toEqual({
      amount: { value: 900, currency: 'EUR' },
      merchantAccount: 'TestMerchant',
      reference: tx.reconciliation_id,
    });
    expect(await notify()).toEqual({ status: 200, body: '[accepted]' });
    expect(await get(tx.id)).toMatchObject({ status: 'capture_succeeded', captured_amount: 900 });

    const refund = await op(tx.id, 'refunds', { amount: 400 }).expect(201);
    expect(refund.body.status).toBe('processing');
    const [refundPost] = fake.posts(/\/refunds$/);
    expect(refundPost.body).toMatchObject({ amount: { value: 400, currency: 'EUR' } });
    expect(String(refundPost.body.reference)).toMatch(new RegExp(`^${tx.reconciliation_id}\\.[0-9A-Za-z]+$`));
    expect(String(refundPost.headers['idempotency-key']).length).toBeLessThanOrEqual(64);
    const rest = await op(tx.id, 'refunds').expect(201);
    expect(rest.body).toMatchObject({ status: 'processing', amount: 500 });
    await notify();
    const refunds = await refundsOf(tx.id);
    expect(refunds.map((r) => [r.id, r.status, r.amount])).toEqual([
      [refund.body.id, 'succeeded', 400],
      [rest.body.id, 'succeeded', 500],
    ]);
    expect((await get(tx.id)).refunded_amount).toBe(900);
  });

  it('void answers authorization_void_pending; CANCELLATION settles it; intent capture is captured at once', async () => {
    const tx = await pay(ADYEN_CARDS.visa);
    fake.queued.length = 0;
    expect((await op(tx.id, 'void').expect(200)).body.status).toBe('authorization_void_pending');
    const [cancel] = fake.posts(/\/cancels$/);
    expect(cancel.path).toBe(`/payments/${tx.connection_transaction_id}/cancels`);
    expect(cancel.body).toEqual({ merchantAccount: 'TestMerchant', reference: tx.reconciliation_id });
    expect(cancel.headers['idempotency-key']).toBe(`${tx.reconciliation_id}:void`);
    await notify();
    expect((await get(tx.id)).status).toBe('authorization_voided');

    const sale = await pay(ADYEN_CARDS.mastercard, { intent: 'capture' });
    expect(sale).toMatchObject({ status: 'capture_succeeded', captured_amount: 1299 });
    const post = fake.posts(/^\/payments$/).at(-1)!;
    expect(post.body.captureDelayHours).toBe(0);
    expect(post.body.additionalData).toBeUndefined();
  });

  it.each([
    [ADYEN_CARDS.refused, 'authorization_declined', 'declined'],
    [ADYEN_CARDS.notEnoughBalance, 'authorization_declined', 'insufficient_funds'],
    [ADYEN_CARDS.expired, 'authorization_declined', 'expired_card'],
    [ADYEN_CARDS.cvcDeclined, 'authorization_declined', 'incorrect_cvv'],
    [ADYEN_CARDS.acquirerError, 'authorization_failed', 'service_error'],
    [ADYEN_CARDS.invalidNumber, 'authorization_failed', 'adyen_101'],
  ])('card %s: %s with error_code %s, never a 5xx', async (number, status, errorCode) => {
    const tx = await pay(number);
    expect(tx).toMatchObject({ status, error_code: errorCode });
    if (errorCode === 'incorrect_cvv') expect(tx.cvv_response_code).toBe('no_match');
  });

  it('a refused capture (4xx) keeps the authorization with Adyen’s code; a failed CAPTURE notification too', async () => {
    const cancelled = await pay(ADYEN_CARDS.visa);
    fake.payment(cancelled.reconciliation_id)!.status = 'cancelled';
    fake.queued.length = 0;
    const refused = await op(cancelled.id, 'capture').expect(200);
    // The fake refuses a capture of a cancelled payment at once, or answers received and notifies a failure.
    if (refused.body.status === 'capture_pending') await notify();
    expect(await get(cancelled.id)).toMatchObject({ status: 'authorization_succeeded' });
    expect((await get(cancelled.id)).error_code).toMatch(/^(adyen_\w+|capture_failed)$/);

    const tx = await pay(ADYEN_CARDS.visa);
    fake.queued.length = 0;
    fake.failNextModification('CAPTURE', 'Insufficient balance on payment');
    expect((await op(tx.id, 'capture').expect(200)).body.status).toBe('capture_pending');
    await notify();
    expect(await get(tx.id)).toMatchObject({
      status: 'authorization_succeeded',
      error_code: 'capture_failed',
    });
  });

  describe('notifications', () => {
    it('a forged, tampered or malformed batch is a 401 and changes nothing', async () => {
      const tx = await pay(ADYEN_CARDS.visa);
      fake.queued.length = 0;
      await op(tx.id, 'capture').expect(200);
      const items = [...fake.queued];
      expect((await notify({ key: OTHER_HMAC_KEY })).status).toBe(401);
      expect((await notify({ tamper: true })).status).toBe(401);
      // One good item beside a bad one: the whole batch is refused.
      const forged = { ...items[0], pspReference: 'FORGED0000000000', success: 'false' as const };
      const mixed = await fetch(notifyUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          live: 'false',
          notificationItems: [
            {
              NotificationRequestItem: {
                ...items[0],
                additionalData: { hmacSignature: signNotification(items[0], HMAC_KEY) },
              },
            },
            {
              NotificationRequestItem: {
                ...forged,
                additionalData: { hmacSignature: signNotification(items[0], HMAC_KEY) },
              },
            },
          ],
        }),
      });
      expect(mixed.status).toBe(401);
      const problem = (await mixed.json()) as Record<string, unknown>;
      expect(problem.detail).toBe('The notification could not be verified.');
      for (const body of ['{}', '[]', '{"notificationItems": []}', '{"notificationItems": [1]}', 'not json'])
        expect(
          (
            await fetch(notifyUrl, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body,
            })
          ).status,
        ).toBeGreaterThanOrEqual(400);
      expect((await get(tx.id)).status).toBe('capture_pending');
      // The genuine batch then settles it.
      expect((await notify({ items })).body).toBe('[accepted]');
      expect((await get(tx.id)).status).toBe('capture_succeeded');
    });

    it('the same notification sent again changes nothing (one transition, one audit row, one event)', async () => {
      const tx = await pay(ADYEN_CARDS.visa);
      fake.queued.length = 0;
      await op(tx.id, 'void').expect(200);
      const items = [...fake.queued];
      await notify({ items });
      const after = await get(tx.id);
      await notify({ items });
      await notify({ items });
      expect(await get(tx.id)).toEqual(after);
      const messages = await auditMessages(tx.id);
      expect(messages.filter((m) => m.startsWith('Adyen notification CANCELLATION'))).toHaveLength(1);
    });

    it('items about payments made elsewhere on the merchant account are accepted and ignored', async () => {
      const foreign = fake.queueEvent({
        eventCode: 'AUTHORISATION',
        pspReference: 'ELSEWHERE0000001',
        merchantReference: 'order-2026-11-24-0001',
        amount: { value: 100, currency: 'EUR' },
        merchantAccountCode: 'TestMerchant',
      });
      const unknown = fake.queueEvent({
        eventCode: 'CAPTURE',
        pspReference: 'ELSEWHERE0000002',
        merchantReference: '7n42DGM5Tflk9n8mGAC6iX',
        amount: { value: 100, currency: 'EUR' },
        merchantAccountCode: 'TestMerchant',
      });
      expect(await notify({ items: [foreign, unknown], key: OTHER_HMAC_KEY })).toEqual({
        status: 200,
        body: '[accepted]',
      });
    });

    it("another tenant's connection key cannot settle this tenant's transaction", async () => {
      const other = await newTenant(t);
      const otherKey = (
        await newApplication(t, other.managementKey, {
          type: 'private',
          permissions: ORCHESTRATION_PERMISSIONS,
        })
      ).key;
      const otherConnection = (
        await createConnection(otherKey, {}, [
          { key: 'api_key', value: API_KEY },
          { key: 'merchant_account', value: 'TestMerchant' },
          { key: 'hmac_key', value: OTHER_HMAC_KEY },
        ]).expect(201)
      ).body.id;
      expect(await waitForConnection(t, otherKey, otherConnection)).toBe('available');
      const tx = await pay(ADYEN_CARDS.visa);
      fake.queued.length = 0;
      await op(tx.id, 'void').expect(200);
      // Signed with the other tenant's key: refused, nothing changes.
      expect((await notify({ key: OTHER_HMAC_KEY })).status).toBe(401);
      expect((await get(tx.id)).status).toBe('authorization_void_pending');
      // The other tenant sees nothing of it.
      await request(t.http)
        .get(`/orchestration/transactions/${tx.id}`)
        .set('BT-API-KEY', otherKey)
        .expect(404);
      await notify();
      expect((await get(tx.id)).status).toBe('authorization_voided');
    });

    it('a connection without an hmac_key cannot be notified: 401, nothing changes', async () => {
      const bare = (
        await createConnection(key, {}, [
          { key: 'api_key', value: API_KEY },
          { key: 'merchant_account', value: 'TestMerchant' },
        ]).expect(201)
      ).body.id;
      expect(await waitForConnection(t, key, bare)).toBe('available');
      const tx = await pay(ADYEN_CARDS.visa, {}, '737', { key: () => key, connection: () => bare });
      fake.queued.length = 0;
      await op(tx.id, 'void').expect(200);
      expect((await notify()).status).toBe(401);
      expect((await get(tx.id)).status).toBe('authorization_void_pending');
      fake.queued.length = 0;
    });
  });

  describe('crashes, time-outs and retries never charge twice', () => {
    it('Adyen authorized but its answer was lost: processing, then the AUTHORISATION notification settles it', async () => {
      const tx = await unanswered(() => pay(ADYEN_CARDS.visa, { intent: 'capture' }));
      expect(tx.status).toBe('processing');
      const payment = fake.payment(tx.reconciliation_id)!;
      // The settlement job waits for the notification: nothing asked of Adyen, nothing changes.
      await settleAfter(61);
      expect((await get(tx.id)).status).toBe('processing');
      await notify({ items: queuedFor(payment.pspReference) });
      expect(await get(tx.id)).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: 1299,
        connection_transaction_id: payment.pspReference,
      });
      expect(fake.posts(/^\/payments$/)).toHaveLength(1);
    });

    it('the same reconciliation id sent twice (a crash between our commit and the call) makes one payment', async () => {
      const before = fake.payments.size;
      const authorize = () =>
        processor().authorize({
          credentials: { api_key: API_KEY, merchant_account: 'TestMerchant' },
          reconciliationId: 'crashTest1',
          attempt: 1,
          amount: 700,
          currency: 'EUR',
          country: null,
          intent: 'authorize',
          card: { number: ADYEN_CARDS.visa, expiration_month: 3, expiration_year: 2030 },
          paymentSource: 'ecommerce',
          merchantInitiated: false,
          isSubsequentPayment: false,
          previousSchemeTransactionId: null,
          threeDSessionId: null,
          threeDSecureEnabled: true,
        });
      const a = await authorize();
      const b = await authorize();
      expect(b.connectionTransactionId).toBe(a.connectionTransactionId);
      expect(fake.payments.size).toBe(before + 1);
      expect(fake.posts().map((r) => r.headers['idempotency-key'])).toEqual([
        'crashTest1:authorize',
        'crashTest1:authorize',
      ]);
      fake.queued.length = 0;
    });

    it('a retried API request (same BT-IDEMPOTENCY-KEY) charges once', async () => {
      const token = await cardToken(key, ADYEN_CARDS.visa);
      const idem = randomUUID();
      const send = () =>
        request(t.http)
          .post('/orchestration/transactions')
          .set('BT-API-KEY', key)
          .set('BT-IDEMPOTENCY-KEY', idem)
          .send({ amount: 500, currency: 'EUR', connection_id: connection, token, intent: 'capture' })
          .expect(201);
      const first = await send();
      const second = await send();
      expect(second.body.id).toBe(first.body.id);
      expect(fake.posts(/^\/payments$/)).toHaveLength(1);
    });

    it('an authorization Adyen never answered nor notified: cancelled by our reference at the time-out, then failed', async () => {
      fake.failNext = 1;
      const tx = await pay(ADYEN_CARDS.visa);
      expect(tx.status).toBe('processing');
      await settleAfter(NOTIFICATION_TIMEOUT_S + 1);
      expect(await get(tx.id)).toMatchObject({
        status: 'authorization_failed',
        error_code: 'processor_timeout',
      });
      const [cancel] = fake.posts(/^\/cancels$/);
      expect(cancel.body).toEqual({
        merchantAccount: 'TestMerchant',
        paymentReference: tx.reconciliation_id,
        reference: `${tx.reconciliation_id}.cancel`,
      });
      expect(cancel.headers['idempotency-key']).toBe(`${tx.reconciliation_id}:technical-cancel`);
      // Its notification changes nothing more.
      await notify();
      expect((await get(tx.id)).status).toBe('authorization_failed');
    });

    it('a capture, void or refund whose notification never comes is failed at the time-out, and logged', async () => {
      const captured = await pay(ADYEN_CARDS.visa);
      const voided = await pay(ADYEN_CARDS.visa);
      const refunded = await pay(ADYEN_CARDS.visa, { intent: 'capture' });
      await op(captured.id, 'capture').expect(200);
      await op(voided.id, 'void').expect(200);
      const refund = await op(refunded.id, 'refunds').expect(201);
      fake.queued.length = 0;
      // Before the time-out nothing happens.
      await settleAfter(NOTIFICATION_TIMEOUT_S - 10);
      expect((await get(captured.id)).status).toBe('capture_pending');
      await settleAfter(NOTIFICATION_TIMEOUT_S + 1);
      expect(await get(captured.id)).toMatchObject({
        status: 'authorization_succeeded',
        error_code: 'notification_timeout',
      });
      expect(await get(voided.id)).toMatchObject({
        status: 'authorization_succeeded',
        error_code: 'notification_timeout',
      });
      expect((await refundsOf(refunded.id))[0]).toMatchObject({ id: refund.body.id, status: 'failed' });
      const logs = t.logs.join('\n');
      expect(logs).toContain(captured.id);
      expect(logs).toContain('notification_timeout');
    });
  });

  describe('3-D Secure', () => {
    it.each([
      [true, 'authorization_succeeded', 'Payment approved'],
      [false, 'authorization_declined', 'Payment declined'],
    ])(
      'authenticated %s: buyer_approval_pending, the approval page sends the buyer to Adyen, the return completes it',
      async (authenticated, status, title) => {
        const tx = await pay(ADYEN_CARDS.threeDSVisa);
        expect(tx.status).toBe('buyer_approval_pending');
        const payment = fake.payment(tx.reconciliation_id)!;
        const page = new URL(tx.payment_method.approval_url);
        expect(page.origin).toBe('https://vault.example');
        const redirect = await request(t.http).get(page.pathname).expect(303);
        expect(redirect.headers.location).toBe(payment.threeDS!.url);
        // The approve/decline buttons are the sandbox's: a vendor's challenge is decided at the vendor.
        await request(t.http).post(`${page.pathname}/approve`).expect(404);

        fake.completeChallenge(tx.reconciliation_id, authenticated);
        const returnPath = `/orchestration/approvals/return/${tx.reconciliation_id}`;
        await request(t.http).get(returnPath).expect(404);
        const back = await request(t.http)
          .get(
            `${returnPath}?redirectResult=${encodeURIComponent(fake.redirectResult(tx.reconciliation_id))}`,
          )
          .expect(200);
        expect(back.text).toContain(title);
        const [details] = fake.posts(/^\/payments\/details$/);
        expect(details.body).toEqual({
          details: { redirectResult: fake.redirectResult(tx.reconciliation_id) },
        });
        expect(details.headers['idempotency-key']).toBe(`${tx.reconciliation_id}:details`);
        const after = await get(tx.id);
        expect(after.status).toBe(status);
        expect(after.payment_method.approval_url).toBeNull();
        // Used: a second return answers not found.
        await request(t.http)
          .get(
            `${returnPath}?redirectResult=${encodeURIComponent(fake.redirectResult(tx.reconciliation_id))}`,
          )
          .expect(404);
        expect(t.logs.join('\n')).not.toContain(fake.redirectResult(tx.reconciliation_id));
        fake.queued.length = 0;
      },
    );

    it('a redirect result of another payment does not complete this one', async () => {
      const mine = await pay(ADYEN_CARDS.threeDSVisa);
      const other = await pay(ADYEN_CARDS.threeDSMastercard);
      fake.completeChallenge(other.reconciliation_id, true);
      await request(t.http)
        .get(
          `/orchestration/approvals/return/${mine.reconciliation_id}?redirectResult=${encodeURIComponent(
            fake.redirectResult(other.reconciliation_id),
          )}`,
        )
        .expect(200);
      expect(await get(mine.id)).toMatchObject({
        status: 'authorization_failed',
        error_code: 'reference_mismatch',
      });
      fake.queued.length = 0;
    });

    it('an expired challenge cancels the payment at Adyen before failing it', async () => {
      const tx = await pay(ADYEN_CARDS.threeDSVisa);
      expect(tx.status).toBe('buyer_approval_pending');
      fake.queued.length = 0;
      await settleAfter(16 * 60);
      expect(await get(tx.id)).toMatchObject({
        status: 'authorization_failed',
        error_code: 'approval_expired',
      });
      // Other challenges of this file expire too; this one's cancel is sent once (or twice with the same
      // Idempotency-Key when the app's own settlement tick runs beside the direct call).
      const cancels = fake.posts(/\/cancels$/).filter((r) => r.body.reference === tx.reconciliation_id);
      expect(cancels.length).toBeGreaterThanOrEqual(1);
      for (const cancel of cancels) {
        expect(cancel.path).toBe(`/payments/${tx.connection_transaction_id}/cancels`);
        expect(cancel.headers['idempotency-key']).toBe(`${tx.reconciliation_id}:void`);
      }
      // Its CANCELLATION changes nothing more.
      await notify();
      expect((await get(tx.id)).status).toBe('authorization_failed');
    });

    it('a buyer who authenticated but never came back: the AUTHORISATION notification settles it', async () => {
      const tx = await pay(ADYEN_CARDS.threeDSVisa);
      fake.completeChallenge(tx.reconciliation_id, true);
      // Adyen completes the payment itself (as after its own time-out on the shopper's return).
      await processor().completeChallenge({
        credentials: { api_key: API_KEY, merchant_account: 'TestMerchant' },
        reconciliationId: tx.reconciliation_id,
        attempt: 1,
        connectionTransactionId: tx.connection_transaction_id ?? '',
        intent: 'authorize',
        approved: true,
        returnParams: { redirectResult: fake.redirectResult(tx.reconciliation_id) },
      });
      fake.queued.splice(
        0,
        fake.queued.length,
        ...fake.queued.filter((i) => i.merchantReference === tx.reconciliation_id),
      );
      await notify();
      const after = await get(tx.id);
      expect(after).toMatchObject({ status: 'authorization_succeeded', authorized_amount: 1299 });
      expect(after.payment_method.approval_url).toBeNull();
    });
  });

  it('card numbers, API keys and HMAC keys never reach the logs (CVCs: the secrets scan)', () => {
    const logs = t.logs.join('\n');
    for (const secret of [ADYEN_CARDS.visa, ADYEN_CARDS.threeDSVisa, API_KEY, HMAC_KEY, OTHER_HMAC_KEY])
      expect(logs).not.toContain(secret);
  });

  it('an HMAC key that is not hexadecimal is a 400 naming it; test and live need a formula with an adapter', async () => {
    const res = await createConnection(key, {}, [
      { key: 'api_key', value: API_KEY },
      { key: 'merchant_account', value: 'TestMerchant' },
      { key: 'hmac_key', value: 'not-a-hex-key' },
    ]);
    expectProblem(res, 400);
    expect(res.body.errors).toEqual({ 'fields[2].value': [expect.stringContaining('hmac_key')] });
    expect(JSON.stringify(res.body)).not.toContain('not-a-hex-key');
    const other = await createConnection(
      key,
      { connection_formula_id: 'nuvei-card', accepted_currencies: ['USD'] },
      [
        { key: 'merchant_id', value: 'm' },
        { key: 'merchant_site_id', value: 's' },
        { key: 'secret_key', value: 'k' },
      ],
    );
    expectProblem(other, 400);
    expect(JSON.stringify(other.body)).toContain('adyen-card');
  });
});
