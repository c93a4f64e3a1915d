import { createHmac, randomUUID } from 'node:crypto';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ADYEN_CARDS,
  CARD_REFUSALS,
  FakeAdyen,
  NotificationItem,
  signNotification,
  THREE_DS_FAILURE,
} from './support/fake-adyen';
import { parseLogLine, PrismProxy, startPrismProxy } from './support/prism';
import { ignoreTimeout, waitFor } from './support/wait';

const KEY = 'adyen_test_key';
const MERCHANT = 'TestMerchant';
const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const PSP = /^[A-Z0-9]{16}$/;

interface Answer {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe('FakeAdyen behind Prism with Adyen Checkout v71', () => {
  let fake: FakeAdyen;
  let prism: PrismProxy;

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}, base?: string) => {
    const res = await fetch(`${base ?? prism.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY, ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    const answer: Answer = {
      status: res.status,
      headers: res.headers,
      body: text ? JSON.parse(text) : undefined,
    };
    return answer;
  };
  const card = (number: string, extra: Record<string, unknown> = {}) => ({
    type: 'scheme',
    number,
    expiryMonth: '03',
    expiryYear: '2030',
    cvc: '737',
    holderName: 'Test Shopper',
    ...extra,
  });
  const paymentRequest = (number: string, extra: Record<string, unknown> = {}) => ({
    amount: { value: 1299, currency: 'EUR' },
    merchantAccount: MERCHANT,
    reference: `order-${randomUUID()}`,
    returnUrl: 'https://shop.example/checkout/return',
    paymentMethod: card(number),
    shopperInteraction: 'Ecommerce',
    additionalData: { manualCapture: 'true' },
    countryCode: 'NL',
    ...extra,
  });
  const pay = (number: string, extra: Record<string, unknown> = {}) =>
    post('/payments', paymentRequest(number, extra), { 'idempotency-key': randomUUID() });
  const lastQueued = () => fake.queued[fake.queued.length - 1];
  const expectServiceError = (answer: Answer, status: number, errorCode?: string) => {
    expect(answer.status).toBe(status);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.body).toMatchObject({ status, errorType: expect.any(String), message: expect.any(String) });
    if (errorCode) expect(answer.body.errorCode).toBe(errorCode);
  };

  beforeAll(async () => {
    fake = await new FakeAdyen().start();
    prism = await startPrismProxy(fake.baseUrl);
  }, 60_000);

  afterAll(async () => {
    await prism?.close();
    await fake?.close();
  });

  afterEach(() => {
    expect(prism.violations()).toEqual([]);
    prism.clear();
  });

  describe('payment methods and authentication', () => {
    it('lists the card brands for a known merchant account', async () => {
      const res = await post('/paymentMethods', {
        merchantAccount: MERCHANT,
        countryCode: 'NL',
        channel: 'Web',
      });
      expect(res.status).toBe(200);
      expect(res.body.paymentMethods).toEqual([
        { type: 'scheme', name: 'Cards', brands: expect.arrayContaining(['visa', 'mc']) },
      ]);
      expect(fake.posts(/^\/paymentMethods$/)[0].headers['x-api-key']).toBe(KEY);
    });

    it('answers 403 for another merchant account and 401 for another API key', async () => {
      expectServiceError(await post('/paymentMethods', { merchantAccount: 'SomeoneElse' }), 403, '901');
      expectServiceError(
        await post('/paymentMethods', { merchantAccount: MERCHANT }, { 'x-api-key': 'wrong' }),
        401,
        '000',
      );
    });
  });

  describe('/payments by card number', () => {
    it('authorises any other card, with the CVC result', async () => {
      const request = paymentRequest(ADYEN_CARDS.visa);
      const res = await post('/payments', request);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        resultCode: 'Authorised',
        pspReference: expect.stringMatching(PSP),
        merchantReference: request.reference,
        amount: { value: 1299, currency: 'EUR' },
        additionalData: {
          authCode: expect.stringMatching(/^\d{6}$/),
          cvcResult: '1 Matches',
          networkTxReference: expect.stringMatching(/^\d{15}$/),
        },
      });
      const payment = fake.payments.get(res.body.pspReference)!;
      expect(payment).toMatchObject({ status: 'authorised', reference: request.reference, capturedValue: 0 });
      expect(lastQueued()).toMatchObject({
        eventCode: 'AUTHORISATION',
        pspReference: res.body.pspReference,
        merchantReference: request.reference,
        merchantAccountCode: MERCHANT,
        amount: { value: 1299, currency: 'EUR' },
        success: 'true',
        paymentMethod: 'visa',
        operations: ['CANCEL', 'CAPTURE', 'REFUND'],
      });
      expect(new Date(lastQueued().eventDate).getTime()).toBeGreaterThan(Date.now() - 60_000);

      const mismatch = await pay(ADYEN_CARDS.mastercard, {
        paymentMethod: card(ADYEN_CARDS.mastercard, { cvc: '000' }),
      });
      expect(mismatch.body.additionalData.cvcResult).toBe('2 Does not match');
      expect(lastQueued().paymentMethod).toBe('mc');
    });

    it('authorises a merchant-initiated payment without CVC, captured at once without manualCapture', async () => {
      const { cvc: _cvc, ...stored } = card(ADYEN_CARDS.visa);
      const res = await pay(ADYEN_CARDS.visa, {
        paymentMethod: stored,
        shopperInteraction: 'ContAuth',
        recurringProcessingModel: 'UnscheduledCardOnFile',
        additionalData: undefined,
      });
      expect(res.body.resultCode).toBe('Authorised');
      expect(res.body.additionalData.cvcResult).toBeUndefined();
      expect(fake.payments.get(res.body.pspReference)).toMatchObject({
        status: 'captured',
        capturedValue: 1299,
      });
      expect(lastQueued().operations).toEqual(['REFUND']);
    });

    it.each(Object.entries(CARD_REFUSALS))('refuses card %s', async (number, refusal) => {
      const res = await pay(number);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ ...refusal, pspReference: expect.stringMatching(PSP) });
      expect(lastQueued()).toMatchObject({
        eventCode: 'AUTHORISATION',
        pspReference: res.body.pspReference,
        success: 'false',
        reason: refusal.refusalReason,
      });
    });

    it('refuses a card whose expiry date has passed', async () => {
      const res = await pay(ADYEN_CARDS.visa, {
        paymentMethod: card(ADYEN_CARDS.visa, { expiryYear: '2020' }),
      });
      expect(res.body).toMatchObject({ resultCode: 'Refused', refusalReasonCode: '6' });
    });

    it('answers 422 (no payment) for the invalid-number card', async () => {
      const before = fake.payments.size;
      const queued = fake.queued.length;
      expectServiceError(await pay(ADYEN_CARDS.invalidNumber), 422, '101');
      expect(fake.payments.size).toBe(before);
      expect(fake.queued.length).toBe(queued);
    });
  });

  describe('3-D Secure', () => {
    it('redirects, then authorises once the shopper authenticated', async () => {
      const request = paymentRequest(ADYEN_CARDS.threeDSVisa);
      const res = await post('/payments', request);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        resultCode: 'RedirectShopper',
        pspReference: expect.stringMatching(PSP),
        merchantReference: request.reference,
        action: { type: 'redirect', method: 'GET', paymentMethodType: 'scheme', url: expect.any(String) },
      });
      expect(res.body.action.url).toBe(`${fake.baseUrl}/3ds/${res.body.pspReference}`);
      const page = await fetch(res.body.action.url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('3-D Secure');
      const queued = fake.queued.length;
      expect(fake.payments.get(res.body.pspReference)!.status).toBe('pending3ds');

      fake.completeChallenge(request.reference, true);
      const details = await post('/payments/details', {
        details: { redirectResult: fake.redirectResult(request.reference) },
      });
      expect(details.status).toBe(200);
      expect(details.body).toMatchObject({
        resultCode: 'Authorised',
        pspReference: res.body.pspReference,
        merchantReference: request.reference,
      });
      expect(fake.queued.length).toBe(queued + 1);
      expect(lastQueued()).toMatchObject({
        eventCode: 'AUTHORISATION',
        success: 'true',
        pspReference: res.body.pspReference,
      });
      // Submitted again: the same answer, no second notification.
      const again = await post('/payments/details', {
        details: { redirectResult: fake.redirectResult(res.body.pspReference) },
      });
      expect(again.body).toEqual(details.body);
      expect(fake.queued.length).toBe(queued + 1);
    });

    it('refuses when the shopper failed the challenge (Mastercard, no pspReference on the redirect)', async () => {
      fake.pspReferenceOnRedirect = false;
      try {
        const request = paymentRequest(ADYEN_CARDS.threeDSMastercard);
        const res = await post('/payments', request);
        expect(res.body.resultCode).toBe('RedirectShopper');
        expect(res.body.pspReference).toBeUndefined();
        fake.completeChallenge(request.reference, false);
        const details = await post('/payments/details', {
          details: { redirectResult: fake.redirectResult(request.reference) },
        });
        expect(details.body).toMatchObject({
          resultCode: 'Refused',
          refusalReason: THREE_DS_FAILURE.refusalReason,
          refusalReasonCode: THREE_DS_FAILURE.refusalReasonCode,
          merchantReference: request.reference,
          pspReference: expect.stringMatching(PSP),
        });
        expect(lastQueued()).toMatchObject({ eventCode: 'AUTHORISATION', success: 'false' });
      } finally {
        fake.pspReferenceOnRedirect = true;
      }
    });

    it("the challenge page's button sends the shopper back with redirectResult", async () => {
      const res = await pay(ADYEN_CARDS.threeDSVisa);
      const back = await fetch(res.body.action.url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'outcome=authenticated',
        redirect: 'manual',
      });
      expect(back.status).toBe(303);
      const location = new URL(back.headers.get('location')!);
      expect(location.origin + location.pathname).toBe('https://shop.example/checkout/return');
      const details = await post('/payments/details', {
        details: { redirectResult: location.searchParams.get('redirectResult') },
      });
      expect(details.body.resultCode).toBe('Authorised');
    });

    it('answers 422 for an unknown redirectResult', async () => {
      expectServiceError(
        await post('/payments/details', { details: { redirectResult: 'bm90LWEtcmVzdWx0' } }),
        422,
      );
    });
  });

  describe('modifications', () => {
    it('captures (partially, twice), refunds, with CAPTURE and REFUND notifications', async () => {
      const payment = (await pay(ADYEN_CARDS.visa)).body;
      const reference = payment.merchantReference;
      const first = await post(`/payments/${payment.pspReference}/captures`, {
        merchantAccount: MERCHANT,
        amount: { value: 1000, currency: 'EUR' },
        reference: 'capture-1',
      });
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        status: 'received',
        pspReference: expect.stringMatching(PSP),
        paymentPspReference: payment.pspReference,
        merchantAccount: MERCHANT,
        amount: { value: 1000, currency: 'EUR' },
        reference: 'capture-1',
      });
      expect(lastQueued()).toMatchObject({
        eventCode: 'CAPTURE',
        pspReference: first.body.pspReference,
        originalReference: payment.pspReference,
        merchantReference: 'capture-1',
        amount: { value: 1000, currency: 'EUR' },
        success: 'true',
      });
      const second = await post(`/payments/${payment.pspReference}/captures`, {
        merchantAccount: MERCHANT,
        amount: { value: 299, currency: 'EUR' },
      });
      expect(second.status).toBe(201);
      expect(second.body.reference).toBeUndefined();
      expect(lastQueued()).toMatchObject({
        eventCode: 'CAPTURE',
        merchantReference: reference,
        success: 'true',
      });
      expect(fake.payments.get(payment.pspReference)).toMatchObject({
        status: 'captured',
        capturedValue: 1299,
      });

      const refund = await post(`/payments/${payment.pspReference}/refunds`, {
        merchantAccount: MERCHANT,
        amount: { value: 500, currency: 'EUR' },
        reference: 'refund-1',
      });
      expect(refund.status).toBe(201);
      expect(refund.body).toEqual({
        status: 'received',
        pspReference: expect.stringMatching(PSP),
        paymentPspReference: payment.pspReference,
        merchantAccount: MERCHANT,
        amount: { value: 500, currency: 'EUR' },
        reference: 'refund-1',
      });
      expect(lastQueued()).toMatchObject({
        eventCode: 'REFUND',
        pspReference: refund.body.pspReference,
        originalReference: payment.pspReference,
        merchantReference: 'refund-1',
        success: 'true',
      });
      // More than what is left: received, then a failed REFUND notification.
      const tooMuch = await post(`/payments/${payment.pspReference}/refunds`, {
        merchantAccount: MERCHANT,
        amount: { value: 1000, currency: 'EUR' },
      });
      expect(tooMuch.status).toBe(201);
      expect(lastQueued()).toMatchObject({
        eventCode: 'REFUND',
        success: 'false',
        reason: expect.any(String),
      });
      expect(fake.payments.get(payment.pspReference)).toMatchObject({
        refundedValue: 500,
        status: 'captured',
      });
    });

    it('cancels an authorisation (CANCELLATION), and fails a capture when asked', async () => {
      const payment = (await pay(ADYEN_CARDS.visa)).body;
      fake.failNextModification('CAPTURE', 'Insufficient balance on payment');
      const capture = await post(`/payments/${payment.pspReference}/captures`, {
        merchantAccount: MERCHANT,
        amount: { value: 1299, currency: 'EUR' },
      });
      expect(capture.status).toBe(201);
      expect(lastQueued()).toMatchObject({
        eventCode: 'CAPTURE',
        success: 'false',
        reason: 'Insufficient balance on payment',
      });
      expect(fake.payments.get(payment.pspReference)).toMatchObject({
        status: 'authorised',
        capturedValue: 0,
      });

      const cancel = await post(`/payments/${payment.pspReference}/cancels`, {
        merchantAccount: MERCHANT,
        reference: 'cancel-1',
      });
      expect(cancel.status).toBe(201);
      expect(cancel.body).toEqual({
        status: 'received',
        pspReference: expect.stringMatching(PSP),
        paymentPspReference: payment.pspReference,
        merchantAccount: MERCHANT,
        reference: 'cancel-1',
      });
      expect(lastQueued()).toMatchObject({
        eventCode: 'CANCELLATION',
        pspReference: cancel.body.pspReference,
        originalReference: payment.pspReference,
        merchantReference: 'cancel-1',
        success: 'true',
      });
      expect(fake.payments.get(payment.pspReference)!.status).toBe('cancelled');
    });

    it('answers 422 for an unknown pspReference', async () => {
      const queued = fake.queued.length;
      for (const [what, body] of [
        ['captures', { merchantAccount: MERCHANT, amount: { value: 1, currency: 'EUR' } }],
        ['cancels', { merchantAccount: MERCHANT }],
        ['refunds', { merchantAccount: MERCHANT, amount: { value: 1, currency: 'EUR' } }],
      ] as const)
        expectServiceError(await post(`/payments/ABCDEFGHIJKLMNOP/${what}`, body), 422, '167');
      expect(fake.queued.length).toBe(queued);
    });

    it('cancels by merchant reference (/cancels): TECHNICAL_CANCEL', async () => {
      const payment = (await pay(ADYEN_CARDS.visa)).body;
      const res = await post('/cancels', {
        merchantAccount: MERCHANT,
        paymentReference: payment.merchantReference,
        reference: 'tech-cancel-1',
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        status: 'received',
        pspReference: expect.stringMatching(PSP),
        paymentReference: payment.merchantReference,
        merchantAccount: MERCHANT,
        reference: 'tech-cancel-1',
      });
      expect(lastQueued()).toMatchObject({
        eventCode: 'TECHNICAL_CANCEL',
        pspReference: res.body.pspReference,
        originalReference: payment.pspReference,
        merchantReference: payment.merchantReference,
        success: 'true',
      });
      expect(fake.payments.get(payment.pspReference)!.status).toBe('cancelled');

      const unknown = await post('/cancels', { merchantAccount: MERCHANT, paymentReference: 'never-paid' });
      expect(unknown.status).toBe(201);
      expect(lastQueued()).toMatchObject({
        eventCode: 'TECHNICAL_CANCEL',
        merchantReference: 'never-paid',
        success: 'false',
      });
      expect(lastQueued().originalReference).toBeUndefined();
    });
  });

  describe('idempotency and faults', () => {
    it('answers the first response again for the same Idempotency-Key and API key', async () => {
      fake.apiKeys.add('adyen_other_key');
      const body = paymentRequest(ADYEN_CARDS.visa);
      const key = randomUUID();
      const first = await post('/payments', body, { 'idempotency-key': key });
      const second = await post('/payments', body, { 'idempotency-key': key });
      expect(second.body).toEqual(first.body);
      expect([...fake.payments.values()].filter((p) => p.reference === body.reference)).toHaveLength(1);
      const other = await post('/payments', body, { 'idempotency-key': key, 'x-api-key': 'adyen_other_key' });
      expect(other.body.pspReference).not.toBe(first.body.pspReference);
      expect(fake.posts(/^\/payments$/).filter((r) => r.body.reference === body.reference)).toHaveLength(3);
    });

    it('hangNext performs the request without answering; failNext answers 500 without doing anything', async () => {
      const body = paymentRequest(ADYEN_CARDS.visa);
      const key = randomUUID();
      fake.hangNext = 1;
      await expect(
        fetch(`${prism.baseUrl}/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'idempotency-key': key },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(1000),
        }),
      ).rejects.toThrow();
      const made = fake.payment(body.reference)!;
      expect(made.status).toBe('authorised');
      expect((await post('/payments', body, { 'idempotency-key': key })).body.pspReference).toBe(
        made.pspReference,
      );

      fake.failNext = 1;
      const payments = fake.payments.size;
      expectServiceError(await pay(ADYEN_CARDS.visa), 500);
      expect(fake.payments.size).toBe(payments);
    });
  });

  describe('notifications', () => {
    let receiver: Server;
    let received: { body: any }[]; // eslint-disable-line @typescript-eslint/no-explicit-any
    let answer: { status: number; body: string };
    let url: string;

    beforeAll(async () => {
      receiver = createServer((req, res) => {
        let text = '';
        req.on('data', (c: Buffer) => (text += c.toString()));
        req.on('end', () => {
          received.push({ body: JSON.parse(text) });
          res.writeHead(answer.status, { 'content-type': 'text/plain' });
          res.end(answer.body);
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks/adyen`;
    });
    afterAll(async () => {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    });
    beforeEach(() => {
      received = [];
      answer = { status: 200, body: '[accepted]' };
      fake.queued.length = 0;
    });

    it("signs with Adyen's HMAC (a known vector, and one computed by hand)", () => {
      // Published in Adyen's API library tests: this key and item give this signature.
      const published: NotificationItem = {
        pspReference: 'pspReference',
        originalReference: 'originalReference',
        merchantAccountCode: 'merchantAccount',
        merchantReference: 'reference',
        amount: { currency: 'EUR', value: 1000 },
        eventCode: 'CAPTURE',
        eventDate: '1970-01-01T00:00:00.000Z',
        success: 'true',
      };
      expect(
        signNotification(published, 'DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00'),
      ).toBe('xhpHvYq2u2Np0rstbZ6QjLGu7JWhvf7Iwaa6EviJSX0=');
      const item: NotificationItem = {
        pspReference: '7914073381342284',
        merchantAccountCode: 'TestMerchant',
        merchantReference: 'TestPayment-1407325143704',
        amount: { currency: 'EUR', value: 1130 },
        eventCode: 'AUTHORISATION',
        eventDate: '2019-05-06T17:15:34.121+02:00',
        success: 'true',
        paymentMethod: 'visa',
        reason: '033899:1111:03/2030',
      };
      const byHand = createHmac('sha256', Buffer.from(HMAC_KEY, 'hex'))
        .update('7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true')
        .digest('base64');
      expect(signNotification(item, HMAC_KEY)).toBe(byHand);
      expect(signNotification({ ...item, success: 'false' }, HMAC_KEY)).not.toBe(byHand);
    });

    it('delivers the queued items signed, and keeps them until the receiver accepts them', async () => {
      const payment = (await pay(ADYEN_CARDS.visa)).body;
      await post(`/payments/${payment.pspReference}/captures`, {
        merchantAccount: MERCHANT,
        amount: { value: 1299, currency: 'EUR' },
      });
      fake.queueEvent({
        eventCode: 'CAPTURE_FAILED',
        pspReference: fake.queued[1].pspReference,
        originalReference: payment.pspReference,
      });
      expect(fake.queued.map((i) => i.eventCode)).toEqual(['AUTHORISATION', 'CAPTURE', 'CAPTURE_FAILED']);
      expect(fake.queued[2]).toMatchObject({
        merchantReference: payment.merchantReference,
        amount: payment.amount,
      });

      answer = { status: 500, body: 'busy' };
      expect(await fake.sendNotifications(url, HMAC_KEY)).toEqual({ status: 500, body: 'busy' });
      expect(fake.queued).toHaveLength(3);

      answer = { status: 200, body: '[accepted]' };
      expect(await fake.sendNotifications(url, HMAC_KEY, { tamper: true })).toEqual({
        status: 200,
        body: '[accepted]',
      });
      const tampered = received[1].body.notificationItems[0].NotificationRequestItem as NotificationItem;
      expect(tampered.additionalData!.hmacSignature).not.toBe(signNotification(tampered, HMAC_KEY));
      expect(fake.queued).toHaveLength(3);

      expect(await fake.sendNotifications(url, HMAC_KEY)).toEqual({ status: 200, body: '[accepted]' });
      const sent = received[2].body;
      expect(sent.live).toBe('false');
      expect(sent.notificationItems).toHaveLength(3);
      for (const { NotificationRequestItem: item } of sent.notificationItems) {
        const fields = [
          item.pspReference,
          item.originalReference ?? '',
          item.merchantAccountCode,
          item.merchantReference,
          item.amount.value,
          item.amount.currency,
          item.eventCode,
          item.success,
        ].join(':');
        const expected = createHmac('sha256', Buffer.from(HMAC_KEY, 'hex')).update(fields).digest('base64');
        expect(item.additionalData.hmacSignature).toBe(expected);
      }
      expect(fake.queued).toHaveLength(0);
      expect(fake.delivered.slice(-3).map((i) => i.eventCode)).toEqual([
        'AUTHORISATION',
        'CAPTURE',
        'CAPTURE_FAILED',
      ]);
    });
  });

  describe("Prism's verdict", () => {
    it('reports an invalid request, which is not forwarded', async () => {
      const requests = fake.requests.length;
      const { returnUrl: _missing, ...request } = paymentRequest(ADYEN_CARDS.visa);
      const res = await post('/payments', { ...request, amount: { value: '12.99', currency: 'EUR' } });
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body.validation.length).toBeGreaterThan(0);
      expect(fake.requests.length).toBe(requests);
      const violations = prism.violations();
      expect(violations).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^POST \/payments: UNPROCESSABLE_ENTITY 422: body .*returnUrl/),
          expect.stringMatching(/^POST \/payments: UNPROCESSABLE_ENTITY 422: body\.amount\.value .*integer/),
        ]),
      );
      prism.clear();
    });

    it('reports an answer of the upstream that breaks the document', async () => {
      fake.respondNext.push({ status: 200, body: { resultCode: 'Approved', unexpected: true } });
      const res = await pay(ADYEN_CARDS.visa);
      expect(res.status).toBe(500);
      expect(prism.violations()).toEqual(
        expect.arrayContaining([expect.stringMatching(/^POST \/payments: VIOLATIONS 500: response\.body/)]),
      );
      prism.clear();

      // A status code the document does not list (for a 4xx) is a warning: the answer passes, reported.
      fake.respondNext.push({ status: 404, body: { status: 404 } });
      expect((await post('/paymentMethods', { merchantAccount: MERCHANT })).status).toBe(404);
      expect(prism.violations()).toEqual([
        expect.stringMatching(/^POST \/paymentMethods: response Unable to match the returned status code/),
      ]);
      prism.clear();
    });

    it("reads Prism's log too (requests sent to Prism itself, without the recording hop)", async () => {
      const requests = fake.requests.length;
      expect((await post('/payments', { merchantAccount: MERCHANT }, {}, prism.prismUrl)).status).toBe(422);
      fake.respondNext.push({ status: 201, body: { status: 'received' } });
      expect(
        (await post('/payments/ABCDEFGHIJKLMNOP/cancels', { merchantAccount: MERCHANT }, {}, prism.prismUrl))
          .status,
      ).toBe(500);
      expect(fake.requests.length).toBe(requests + 1);
      await waitFor(() => prism.violations().length >= 2, {
        timeoutMs: 5000,
        intervalMs: 50,
        what: "both violations in Prism's log",
      }).catch(ignoreTimeout);
      expect(prism.violations()).toEqual([
        "POST /payments: UNPROCESSABLE_ENTITY: Invalid request (Prism's log)",
        "POST /payments/ABCDEFGHIJKLMNOP/cancels: VIOLATIONS: Request/Response not valid (Prism's log)",
      ]);
      prism.clear();
    });

    it('parses both kinds of log line, and ignores errors that are not violations', () => {
      expect(
        parseLogLine(
          '[6:00:43 AM] › [HTTP SERVER] post /payments ✖  error     Request terminated with error: https://stoplight.io/prism/errors#UNPROCESSABLE_ENTITY: Invalid request',
        ),
      ).toEqual({ route: 'POST /payments', text: "UNPROCESSABLE_ENTITY: Invalid request (Prism's log)" });
      expect(
        parseLogLine(
          '[6:00:43 AM] ›     [VALIDATOR] ⚠  warning   Violation: response.body Response body must be object',
        ),
      ).toEqual({ route: '', text: 'response.body Response body must be object' });
      expect(
        parseLogLine(
          '[6:00:43 AM] › [HTTP SERVER] post /payments ✖  error     Request terminated with error: FetchError: request to http://127.0.0.1:1/payments failed',
        ),
      ).toBeUndefined();
      expect(
        parseLogLine('[6:00:43 AM] ›     [PROXY] ℹ  info      < Received forward response'),
      ).toBeUndefined();
    });
  });
});
