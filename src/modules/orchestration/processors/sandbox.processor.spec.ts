import { Test } from '@nestjs/testing';
import { AppConfig } from '../../../config/app-config';
import { loadConfig } from '../../../config/load-config';
import { FORMULAS } from '../formulas/formulas';
import type { AuthorizeRequest } from './processor.port';
import { PROCESSOR_PROVIDERS, ProcessorRegistry } from './processor.registry';

const request = (number: string, extra: Partial<AuthorizeRequest> = {}): AuthorizeRequest => ({
  credentials: { key: 'ok' },
  reconciliationId: 'abc',
  attempt: 1,
  amount: 100,
  currency: 'USD',
  country: null,
  intent: 'authorize',
  card: { number, expiration_month: 1, expiration_year: 2031 },
  cvc: '123',
  paymentSource: 'ecommerce',
  merchantInitiated: false,
  isSubsequentPayment: false,
  previousSchemeTransactionId: null,
  threeDSessionId: null,
  threeDSecureEnabled: true,
  ...extra,
});

const ID_FORMATS: Record<string, RegExp> = {
  'stripe-card': /^pi_[0-9A-Za-z]{24}$/,
  'adyen-card': /^[0-9A-Z]{16}$/,
  'braintree-card': /^[0-9a-z]{8}$/,
  'checkout-card': /^pay_[0-9a-z]{26}$/,
  'cybersource-card': /^\d{22}$/,
  'nuvei-card': /^\d{19}$/,
  'dlocal-card': /^D-4-[0-9a-f-]{36}$/,
  'fiserv-card': /^\d{12}$/,
  'chaseorbital-card': /^[0-9A-F]{40}$/,
  'powertranz-card': /^[0-9a-f-]{36}$/,
  'worldpaywpg-card': /^order-[0-9A-Za-z]{20}$/,
  'worldpayvap-card': /^\d{18}$/,
  'authorizenet-card': /^\d{11}$/,
  'globalpayments-card': /^TRN_[0-9A-Za-z]{30}$/,
  'elavon-card': /^\d{6}A\d{2}-[0-9A-F-]{36}$/,
  'nmi-card': /^\d{10}$/,
  'moneris-card': /^\d{6}-0_\d{2}$/,
  'rapyd-card': /^payment_[0-9a-f]{32}$/,
};

describe('sandbox processors', () => {
  let registry: ProcessorRegistry;
  // Built by Nest, as the orchestration module builds it.
  beforeAll(async () => {
    const processors = await Test.createTestingModule({
      providers: [{ provide: AppConfig, useValue: loadConfig({}) }, ...PROCESSOR_PROVIDERS],
    }).compile();
    registry = processors.get(ProcessorRegistry);
  });
  const sandbox = (formulaId: string) => registry.for({ formulaId, environment: 'sandbox' });

  it('there is one for every formula, with ids shaped like the vendor ids', async () => {
    expect(FORMULAS.map((f) => f.id).sort()).toEqual(Object.keys(ID_FORMATS).sort());
    for (const formula of FORMULAS) {
      const processor = sandbox(formula.id);
      expect(processor.formulaId).toBe(formula.id);
      const result = await processor.authorize(request('4242424242424242'));
      expect(result.connectionTransactionId).toMatch(ID_FORMATS[formula.id]);
      expect(result.schemeTransactionId).toMatch(/^\d{15}$/);
    }
  });

  it('verifies credentials: any value containing "invalid" is refused, without echoing it', async () => {
    const processor = sandbox('stripe-card');
    expect(await processor.verifyCredentials({ secret_key: 'sk_test_1' })).toEqual({ ok: true });
    const refused = await processor.verifyCredentials({ secret_key: 'sk_INVALID_1' });
    expect(refused.ok).toBe(false);
    expect(refused.reason).not.toContain('sk_INVALID_1');
  });

  it('follows the test card table', async () => {
    const p = sandbox('adyen-card');
    expect((await p.authorize(request('4242424242424242', { intent: 'capture' }))).captured).toBe(true);
    expect(await p.authorize(request('4000000000009995'))).toMatchObject({
      outcome: 'declined',
      errorCode: 'insufficient_funds',
      authResponseCode: '51',
    });
    expect(await p.authorize(request('4000000000000127', { cvc: undefined }))).toMatchObject({
      outcome: 'approved',
      cvvResponseCode: 'not_provided',
    });
    expect((await p.authorize(request('4000000000003220'))).outcome).toBe('challenge');
    const op = {
      credentials: {},
      reconciliationId: 'r',
      attempt: 1,
      connectionTransactionId: 'x',
      amount: 1,
      currency: 'USD',
    };
    expect((await p.capture({ ...op, cardLast4: '0259' })).status).toBe('pending');
    expect((await p.capture({ ...op, cardLast4: '4242' })).status).toBe('succeeded');
  });
});
