import request from 'supertest';
import type { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { TenantKeysService } from '../../src/common/crypto/tenant-keys.service';
import { newApplication, newTenant, startApp, TestApp } from './app';
import { FakeAdyen } from './fake-adyen';
import { FakeBraintree } from './fake-braintree';
import { FakeCheckout } from './fake-checkout';
import { FakeStripe } from './fake-stripe';
import { waitForConnection } from './orchestration';
import { createWebhookRow } from './webhooks';

export const ADYEN_HMAC = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
export const CHECKOUT_SECRET = 'whsec_relay_checkout_secret';
export const RELAY_EVENTS = ['relay:refund:created', 'relay:refund:succeeded', 'relay:refund:failed'];
export const RELAY_PERMISSIONS = [
  'orchestration:connections:create',
  'orchestration:connections:update',
  'orchestration:relay',
];

/** Each rail's connection fields (environment `test`, at its fake). */
const FIELDS: Record<string, { key: string; value: string }[]> = {
  'stripe-card': [{ key: 'secret_key', value: 'sk_test_fake' }],
  'adyen-card': [
    { key: 'api_key', value: 'adyen_test_key' },
    { key: 'merchant_account', value: 'TestMerchant' },
    { key: 'hmac_key', value: ADYEN_HMAC },
  ],
  'checkout-card': [
    { key: 'secret_key', value: 'sk_sbox_fake_checkout_key' },
    { key: 'public_key', value: 'pk_sbox_fake_checkout_public' },
    { key: 'processing_channel_id', value: 'pc_fakechannel000000000000001' },
    { key: 'webhook_secret', value: CHECKOUT_SECRET },
  ],
  'braintree-card': [
    { key: 'merchant_id', value: 'fake_merchant' },
    { key: 'merchant_account_id', value: 'usd_account' },
    { key: 'public_key', value: 'bt_public_test' },
    { key: 'private_key', value: 'bt_private_test' },
  ],
};

/** The app with the four rails' `test` environments at their fakes, listening (for their notifications). */
export interface RelayRails {
  t: TestApp;
  stripe: FakeStripe;
  adyen: FakeAdyen;
  checkout: FakeCheckout;
  braintree: FakeBraintree;
  /** Where the app listens. */
  base: string;
  tenantId: string;
  managementKey: string;
  /** A private key with RELAY_PERMISSIONS. */
  key: string;
  /** The tenant's connections by formula id (`test`), and `sandbox` (stripe-card's sandbox). */
  connections: Record<string, string>;
  close(): Promise<void>;
}

/**
 * Starts the fakes and the app, makes a tenant with a private key, one `test` connection per rail and a
 * sandbox one, and a webhook subscribed to the relay events (so that the outbox records them).
 */
export async function startRelayRails(): Promise<RelayRails> {
  const [stripe, adyen, checkout, braintree] = await Promise.all([
    new FakeStripe().start(),
    new FakeAdyen().start(),
    new FakeCheckout().start(),
    new FakeBraintree().start(),
  ]);
  const t = await startApp({
    VENDOR_BASE_URLS: [
      `stripe-card=${stripe.baseUrl}`,
      `adyen-card=${adyen.baseUrl}`,
      `checkout-card=${checkout.baseUrl}`,
      `braintree-card=${braintree.baseUrl}`,
    ].join(','),
    PUBLIC_BASE_URL: 'https://vault.example',
  });
  await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}`;
  const { tenantId, managementKey } = await newTenant(t, 'relay');
  const key = (await newApplication(t, managementKey, { type: 'private', permissions: RELAY_PERMISSIONS }))
    .key;
  const connect = async (formulaId: string, environment = 'test') => {
    const res = await request(t.http)
      .post('/orchestration/connections')
      .set('BT-API-KEY', key)
      .send({
        connection_formula_id: formulaId,
        method: 'card',
        display_name: `${formulaId} ${environment}`,
        fields:
          environment === 'sandbox' ? [{ key: 'secret_key', value: 'sk_test_sandbox' }] : FIELDS[formulaId],
        accepted_countries: ['US'],
        accepted_currencies: ['USD'],
        environment,
      })
      .expect(201);
    if ((await waitForConnection(t, key, res.body.id)) !== 'available')
      throw new Error(`the ${formulaId} connection is not available`);
    return res.body.id as string;
  };
  const connections: Record<string, string> = {};
  for (const formula of Object.keys(FIELDS)) connections[formula] = await connect(formula);
  connections.sandbox = await connect('stripe-card', 'sandbox');
  await createWebhookRow(t.app.get(DataSource), t.app.get(TenantKeysService), tenantId, {
    url: 'https://receiver.example/hook',
    events: RELAY_EVENTS,
  });
  return {
    t,
    stripe,
    adyen,
    checkout,
    braintree,
    base,
    tenantId,
    managementKey,
    key,
    connections,
    close: async () => {
      await t.close();
      await Promise.all([stripe.close(), adyen.close(), checkout.close(), braintree.close()]);
    },
  };
}
