import request from 'supertest';
import { newApplication, newTenant, startApp, type TestApp, type TestTenant } from './app';
import { FakeAdyen } from './fake-adyen';
import { FakeBraintree } from './fake-braintree';
import { FakeCheckout } from './fake-checkout';
import { FakeStripe } from './fake-stripe';
import { ORCHESTRATION_PERMISSIONS, waitForConnection } from './orchestration';
import { CHECKOUT_SPEC, PrismProxy, startPrismProxy } from './prism';

export type Rail = 'stripe' | 'adyen' | 'checkout' | 'braintree';
export const RAILS: readonly Rail[] = ['stripe', 'adyen', 'checkout', 'braintree'];

/** What `FourRails.startWithApp` answers. */
export interface FourRailsApp {
  t: TestApp;
  tenant: TestTenant;
  /** A private key of the tenant's, for orchestration and its routing rules. */
  key: string;
  /** The tenant's `test` connection at each rail. */
  ids: Record<Rail, string>;
}

/**
 * The four real rails as one test file meets them: each vendor's fake on loopback, Adyen's and
 * Checkout.com's behind Prism with their own documents (every request checked on its way), the service's
 * VENDOR_BASE_URLS pointing at them, and a tenant's `test` connection to each with the fake's credentials.
 */
export class FourRails {
  readonly fakes = {
    stripe: new FakeStripe(),
    adyen: new FakeAdyen(),
    checkout: new FakeCheckout(),
    braintree: new FakeBraintree(),
  };
  readonly prisms: { adyen?: PrismProxy; checkout?: PrismProxy } = {};
  /** The app `startWithApp` started, closed by `close()`. */
  private app?: TestApp;

  async start(): Promise<this> {
    await Promise.all(Object.values(this.fakes).map((fake) => fake.start()));
    this.prisms.adyen = await startPrismProxy(this.fakes.adyen.baseUrl);
    this.prisms.checkout = await startPrismProxy(this.fakes.checkout.baseUrl, CHECKOUT_SPEC);
    return this;
  }

  /**
   * The rails started, then the app with VENDOR_BASE_URLS at them (PUBLIC_BASE_URL https://vault.example,
   * and `env` besides), a tenant named `name`, its private key for orchestration and its routing rules, and
   * its `test` connection to each rail.
   */
  async startWithApp(name: string, env: Record<string, string> = {}): Promise<FourRailsApp> {
    await this.start();
    const t = (this.app = await startApp({
      VENDOR_BASE_URLS: this.vendorBaseUrls,
      PUBLIC_BASE_URL: 'https://vault.example',
      ...env,
    }));
    const tenant = await newTenant(t, name);
    const permissions = [...ORCHESTRATION_PERMISSIONS, 'orchestration:flows:update'];
    const key = (await newApplication(t, tenant.managementKey, { type: 'private', permissions })).key;
    const ids = {} as Record<Rail, string>;
    for (const rail of RAILS) ids[rail] = await this.connect(t, key, rail);
    return { t, tenant, key, ids };
  }

  /** The service's VENDOR_BASE_URLS: Stripe's and Braintree's fakes directly, the other two through Prism. */
  get vendorBaseUrls(): string {
    return [
      `stripe-card=${this.fakes.stripe.baseUrl}`,
      `adyen-card=${this.prisms.adyen!.baseUrl}`,
      `checkout-card=${this.prisms.checkout!.baseUrl}`,
      `braintree-card=${this.fakes.braintree.baseUrl}`,
    ].join(',');
  }

  /** A connection's field values the rail's fake accepts (`name` tells Checkout.com's public keys apart). */
  fields(rail: Rail, name = 'tests'): Record<string, string> {
    switch (rail) {
      case 'stripe':
        return { secret_key: 'sk_test_fake' };
      case 'adyen':
        return {
          api_key: 'adyen_test_key',
          merchant_account: 'TestMerchant',
          hmac_key: '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056',
        };
      case 'checkout':
        return {
          secret_key: [...this.fakes.checkout.secretKeys][0],
          public_key: `pk_sbox_${name.replace(/\W/g, '_')}`,
          processing_channel_id: [...this.fakes.checkout.processingChannels][0],
        };
      case 'braintree':
        return { merchant_id: 'fake_merchant', public_key: 'bt_public_test', private_key: 'bt_private_test' };
    }
  }

  /** The tenant's `test` connection at the rail (USD, US), once its credentials are verified: its id. */
  async connect(t: TestApp, key: string, rail: Rail, fields = this.fields(rail)): Promise<string> {
    const formula = `${rail}-card`;
    const res = await request(t.http)
      .post('/orchestration/connections')
      .set('BT-API-KEY', key)
      .send({
        connection_formula_id: formula,
        method: 'card',
        display_name: formula,
        environment: 'test',
        fields: Object.entries(fields).map(([k, value]) => ({ key: k, value })),
        accepted_countries: ['US'],
        accepted_currencies: ['USD'],
      })
      .expect(201);
    const status = await waitForConnection(t, key, res.body.id);
    if (status !== 'available') throw new Error(`the ${formula} connection is ${status}, not available`);
    return res.body.id as string;
  }

  /** What any vendor's document, schema or package, or a fake's own checks, refused so far (none expected). */
  violations(): unknown[] {
    return [
      ...this.prisms.adyen!.violations(),
      ...this.prisms.checkout!.violations(),
      ...this.fakes.checkout.sourceViolations,
      ...this.fakes.checkout.formViolations,
      ...this.fakes.adyen.formViolations,
      ...this.fakes.stripe.formViolations,
      ...this.fakes.braintree.invalid,
    ];
  }

  /** The app `startWithApp` started, if any, then the proxies and the fakes. */
  async close(): Promise<void> {
    await this.app?.close();
    await this.prisms.adyen?.close();
    await this.prisms.checkout?.close();
    await Promise.all(Object.values(this.fakes).map((fake) => fake.close()));
  }
}
