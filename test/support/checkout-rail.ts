import request from 'supertest';
import type { AddressInfo } from 'node:net';
import { CheckoutProcessor } from '../../src/modules/orchestration/processors/checkout/checkout.processor';
import { ProcessorRegistry } from '../../src/modules/orchestration/processors/processor.registry';
import { newApplication, newTenant, startApp, TestApp } from './app';
import { FakeCheckout } from './fake-checkout';
import { ORCHESTRATION_PERMISSIONS, settleOwn, waitForConnection } from './orchestration';
import { CHECKOUT_SPEC, PrismProxy, startPrismProxy } from './prism';

export const SECRET_KEY = 'sk_sbox_fake_checkout_key';
export const CHANNEL = 'pc_fakechannel000000000000001';
export const WEBHOOK_SECRET = 'whsec_checkout_rail_test_secret';

export type Tx = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const RAIL_PERMISSIONS = [
  ...ORCHESTRATION_PERMISSIONS,
  'orchestration:buyers:create',
  'orchestration:buyers:read',
  'orchestration:buyers:update',
  'orchestration:flows:read',
  'orchestration:flows:update',
];

/** The app with checkout-card's `test` environment pointed at a fake Checkout.com behind Prism, and helpers. */
export interface CheckoutRail {
  fake: FakeCheckout;
  prism: PrismProxy;
  t: TestApp;
  key: string;
  managementKey: string;
  connection: string;
  webhookUrl: string;
  newKey(): Promise<{ key: string; managementKey: string }>;
  createConnection(apiKey: string, fields?: { key: string; value: string }[]): request.Test;
  cardToken(apiKey: string, number: string, cvc?: string): Promise<string>;
  pay(number: string, extra?: Record<string, unknown>, cvc?: string, apiKey?: string): Promise<Tx>;
  op(id: string, what: string, body?: Record<string, unknown>): request.Test;
  get(id: string, apiKey?: string): Promise<Tx>;
  refundsOf(id: string): Promise<Tx[]>;
  attemptsOf(id: string): Promise<Tx[]>;
  webhooks(opts?: Parameters<FakeCheckout['sendWebhooks']>[2]): Promise<number[]>;
  processor(): CheckoutProcessor;
  settleAfter(seconds: number): Promise<void>;
  close(): Promise<void>;
}

export const defaultFields = (secret = SECRET_KEY) => [
  { key: 'secret_key', value: secret },
  { key: 'public_key', value: 'pk_sbox_fake_checkout_public' },
  { key: 'processing_channel_id', value: CHANNEL },
  { key: 'webhook_secret', value: WEBHOOK_SECRET },
];

export async function startCheckoutRail(): Promise<CheckoutRail> {
  const fake = await new FakeCheckout().start();
  const prism = await startPrismProxy(fake.baseUrl, CHECKOUT_SPEC);
  const t = await startApp({
    VENDOR_BASE_URLS: `checkout-card=${prism.baseUrl}`,
    PUBLIC_BASE_URL: 'https://vault.example',
  });
  await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', resolve));
  const webhookUrl = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}/orchestration/notifications/checkout`;
  const newKey = async () => {
    const tenant = await newTenant(t);
    const app = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: RAIL_PERMISSIONS,
    });
    return { key: app.key, managementKey: tenant.managementKey };
  };
  const createConnection = (apiKey: string, fields = defaultFields()) =>
    request(t.http)
      .post('/orchestration/connections')
      .set('BT-API-KEY', apiKey)
      .send({
        connection_formula_id: 'checkout-card',
        method: 'card',
        display_name: 'Checkout.com test',
        fields,
        accepted_countries: ['GB', 'US'],
        accepted_currencies: ['GBP', 'USD'],
        environment: 'test',
      });
  const { key, managementKey } = await newKey();
  const created = await createConnection(key).expect(201);
  const connection = created.body.id as string;
  if ((await waitForConnection(t, key, connection)) !== 'available')
    throw new Error('connection not available');
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
  const rail: CheckoutRail = {
    fake,
    prism,
    t,
    key,
    managementKey,
    connection,
    webhookUrl,
    newKey,
    createConnection,
    cardToken,
    pay: async (number, extra = {}, cvc = '100', apiKey = key) =>
      (
        await request(t.http)
          .post('/orchestration/transactions')
          .set('BT-API-KEY', apiKey)
          .send({
            amount: 1299,
            currency: 'GBP',
            connection_id: connection,
            ...(number ? { token: await cardToken(apiKey, number, cvc) } : {}),
            ...extra,
          })
          .expect(201)
      ).body,
    op: (id, what, body = {}) =>
      request(t.http).post(`/orchestration/transactions/${id}/${what}`).set('BT-API-KEY', key).send(body),
    get: async (id, apiKey = key) =>
      (await request(t.http).get(`/orchestration/transactions/${id}`).set('BT-API-KEY', apiKey).expect(200))
        .body,
    refundsOf: async (id) =>
      (
        await request(t.http)
          .get(`/orchestration/transactions/${id}/refunds`)
          .set('BT-API-KEY', key)
          .expect(200)
      ).body.data,
    attemptsOf: async (id) =>
      (
        await request(t.http)
          .get(`/orchestration/transactions/${id}/attempts`)
          .set('BT-API-KEY', key)
          .expect(200)
      ).body,
    webhooks: (opts = {}) => fake.sendWebhooks(webhookUrl, WEBHOOK_SECRET, opts),
    processor: () =>
      t.app
        .get(ProcessorRegistry)
        .for({ formulaId: 'checkout-card', environment: 'test' }) as CheckoutProcessor,
    settleAfter: async (seconds) => {
      await settleOwn(t, { after: seconds });
    },
    close: async () => {
      await t.close();
      await prism.close();
      await fake.close();
    },
  };
  return rail;
}
