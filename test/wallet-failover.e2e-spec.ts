import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { newApplication, type TestApp, type TestTenant } from './support/app';
import { FourRails } from './support/four-rails';
import { namedAttempts, oneRouteRule } from './support/orchestration';
import { ApplePaySender } from './support/wallets/apple-pay-sender';
import { GooglePayTestSender } from './support/wallets/google-pay-sender';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** An amount Checkout.com's fake declines with that response code (20005, do not honour: soft). */
const DO_NOT_HONOUR_AT_CHECKOUT = 20005;
const VISA_DPAN = '4895370012003478';
const MASTERCARD_DPAN = '5204245250001488';

/**
 * A wallet payment end to end (docs/wallets.md): the payload as the wallet gives it to the checkout page
 * (made by the test suite's own Apple Pay and Google Pay senders), verified and decrypted by the vault into
 * a `network_token`, then routed by a rule and failed over between two real rails' fakes, the second rail
 * receiving the decrypted DPAN with the wallet's cryptogram in its network-token form.
 */
describe('wallet payments routed and failed over', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let key: string;
  let publicKey: string;
  let apple: ApplePaySender;
  const google = new GooglePayTestSender();
  const rails = new FourRails();
  const fakes = rails.fakes;
  const ids = {} as Record<keyof typeof fakes, string>;
  /** The one route rule: the connections in this order (the previous rule deleted). */
  const route = oneRouteRule(ids);

  const call = (method: 'get' | 'post' | 'put' | 'delete', path: string, apiKey = key) =>
    request(t.http)[method](path).set('BT-API-KEY', apiKey);

  const pay = async (token: string, amount: number) => {
    const tx = (
      await call('post', '/orchestration/transactions')
        .send({ amount, currency: 'USD', country: 'US', token })
        .expect(201)
    ).body as Json;
    const attempts = (await namedAttempts(t, key, tx.id, ids)).map((a) => [a.number, a.connection, a.status]);
    return { tx, attempts };
  };

  beforeAll(async () => {
    apple = await ApplePaySender.create();
    const dir = mkdtempSync(join(tmpdir(), 'wallet-failover-'));
    writeFileSync(join(dir, 'apple-root.pem'), apple.rootPem);
    const app = await rails.startWithApp('wallet failover', {
      APPLE_PAY_ROOT_CA: join(dir, 'apple-root.pem'),
      GOOGLE_PAY_ROOT_KEYS: google.writeRootKeysFile(dir),
    });
    ({ t, tenant, key } = app);
    Object.assign(ids, app.ids);
    publicKey = (
      await newApplication(t, tenant.managementKey, { type: 'public', permissions: ['token:create'] })
    ).key;
  }, 90_000);
  afterAll(() => rails.close());

  it('Apple Pay: the checkout page posts the payload; Checkout.com declines (soft), Adyen authorizes with the cryptogram', async () => {
    const created = await call('post', '/wallets/apple-pay/merchant-keys', tenant.managementKey).expect(201);
    const merchant = {
      certificatePem: await apple.issueMerchantCertificate(created.body.csr, 'merchant.com.example.shop'),
      merchantId: 'merchant.com.example.shop',
    };
    await call('put', `/wallets/apple-pay/merchant-keys/${created.body.id}`, tenant.managementKey)
      .send({ certificate: merchant.certificatePem })
      .expect(200);
    const cryptogram = 'AOXLmDd4ZbRGAAGC7gUnAoABFA==';
    const paymentData = await apple.paymentData(merchant, { dpan: VISA_DPAN, cryptogram, eci: '5' });
    const token = await call('post', '/wallets/apple-pay/tokens', publicKey)
      .send({ payment_data: paymentData })
      .expect(201);
    expect(token.body).toMatchObject({ type: 'network_token', mask: { source: 'apple_pay' } });

    await route(t, key, ['checkout', 'adyen']);
    const { tx, attempts } = await pay(token.body.id, DO_NOT_HONOUR_AT_CHECKOUT);
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      connection: { id: ids.adyen },
      payment_method: { method: 'network_token', source: 'apple_pay', label: '3478' },
    });
    expect(attempts).toEqual([
      [1, 'checkout', 'declined'],
      [2, 'adyen', 'succeeded'],
    ]);
    expect(fakes.checkout.payment(tx.reconciliation_id)?.request.source).toMatchObject({
      type: 'network_token',
      token: VISA_DPAN,
      token_type: 'applepay',
      cryptogram,
    });
    expect(fakes.adyen.requests.filter((r) => r.path === '/payments').at(-1)!.body).toMatchObject({
      reference: `${tx.reconciliation_id}.a2`,
      paymentMethod: { type: 'networkToken', number: VISA_DPAN },
      mpiData: { tokenAuthenticationVerificationValue: cryptogram, eci: '05' },
    });
    expect(rails.violations()).toEqual([]);
  });

  it('Google Pay: Stripe answers 429, Braintree authorizes the DPAN with the cryptogram (GOOGLE_PAY origin)', async () => {
    const created = await call('post', '/wallets/google-pay/merchant-keys', tenant.managementKey)
      .send({ gateway_merchant_id: 'acme-shop' })
      .expect(201);
    const cryptogram = 'AgAAAAAABk4DWZ4C28yUQAAAAAA=';
    const payload = google.token({
      recipientPublicKey: created.body.public_key,
      gatewayMerchantId: 'acme-shop',
      pan: MASTERCARD_DPAN,
      cryptogram,
    });
    const token = await call('post', '/wallets/google-pay/tokens', publicKey)
      .send({ token: payload })
      .expect(201);
    expect(token.body).toMatchObject({ type: 'network_token', mask: { source: 'google_pay' } });

    await route(t, key, ['stripe', 'braintree']);
    fakes.stripe.rateLimitNext = 1;
    const { tx, attempts } = await pay(token.body.id, 1500);
    expect(tx).toMatchObject({
      status: 'authorization_succeeded',
      connection: { id: ids.braintree },
      payment_method: { method: 'network_token', source: 'google_pay', label: '1488' },
    });
    expect(attempts).toEqual([
      [1, 'stripe', 'failed'],
      [2, 'braintree', 'succeeded'],
    ]);
    const tokenized = fakes.braintree.requests.filter((r) => /^Tokenize/.test(r.operationName ?? '')).at(-1)!;
    expect(JSON.stringify(tokenized)).toContain(cryptogram);
    expect(JSON.stringify(tokenized)).toContain('GOOGLE_PAY');
    expect(rails.violations()).toEqual([]);
    // A second payment with the token: the cryptogram served its one authorization.
    await route(t, key, ['braintree']);
    const again = await pay(token.body.id, 1500);
    expect(again.tx.status).toBe('authorization_succeeded');
    expect(
      JSON.stringify(fakes.braintree.requests.filter((r) => /^Tokenize/.test(r.operationName ?? '')).at(-1)),
    ).not.toContain(cryptogram);
  });
});
