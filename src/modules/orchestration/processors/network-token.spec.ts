import Ajv from 'ajv';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSchema, getVariableValues, Kind, OperationDefinitionNode, parse } from 'graphql';
import { Test } from '@nestjs/testing';
import { AppConfig } from '../../../config/app-config';
import { loadConfig } from '../../../config/load-config';
import { ADYEN_BRANDS, networkTokenMpiData, storedTokenInteraction } from './adyen/adyen-network-token';
import { braintreeTokenizing } from './braintree/braintree-network-token';
import { BRAINTREE_OPERATIONS } from './braintree/braintree-operations';
import { checkoutSource } from './checkout/checkout.processor';
import { networkTokenOf } from './network-token';
import type { AuthorizeRequest, NetworkTokenDetails } from './processor.port';
import { PROCESSOR_PROVIDERS, ProcessorRegistry } from './processor.registry';
import { cardOptions } from './stripe/stripe-params';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SPECS = join(__dirname, '../../../../test/vendor-specs');
const CRYPTOGRAM = 'AgAAAAAAAIR8CQrXcIhbQAAAAAA=';
const VISA_DPAN = '4895370012003478';
const MASTERCARD_DPAN = '5204245250001488';
const AMEX_DPAN = '378282246310005';

const request = (
  number: string,
  networkToken?: Partial<NetworkTokenDetails>,
  extra: Partial<AuthorizeRequest> = {},
): AuthorizeRequest => ({
  credentials: { key: 'ok' },
  reconciliationId: 'abc',
  attempt: 1,
  amount: 100,
  currency: 'USD',
  country: null,
  intent: 'authorize',
  card: { number, expiration_month: 6, expiration_year: 2031 },
  ...(networkToken ? { networkToken: { source: 'apple_pay', scheme: null, ...networkToken } } : {}),
  paymentSource: 'ecommerce',
  merchantInitiated: false,
  isSubsequentPayment: false,
  previousSchemeTransactionId: null,
  threeDSessionId: null,
  threeDSecureEnabled: false,
  ...extra,
});

describe('network tokens: the facts every adapter reads', () => {
  it("the DPAN's scheme from its digits when the token does not name it; the token's own otherwise", () => {
    expect(networkTokenOf(request(VISA_DPAN, { cryptogram: CRYPTOGRAM }))?.scheme).toBe('visa');
    expect(networkTokenOf(request(MASTERCARD_DPAN, {}))?.scheme).toBe('mastercard');
    expect(networkTokenOf(request(VISA_DPAN, { scheme: 'cartes_bancaires' }))?.scheme).toBe(
      'cartes_bancaires',
    );
    expect(networkTokenOf(request(VISA_DPAN))).toBeUndefined();
  });
});

describe('checkout-card: the network_token source', () => {
  const doc = JSON.parse(readFileSync(join(SPECS, 'checkout-nas.json'), 'utf8')) as Json;
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addSchema({ $id: 'cko', components: { schemas: doc.components.schemas } });
  const mapping = doc.components.schemas.PaymentRequestSource.discriminator.mapping as Record<string, string>;
  /** The source validated against the schema its type maps to (Prism does not check it). */
  const valid = (source: Json): Json => {
    const validate = ajv.getSchema(`cko#/components/schemas/${mapping[source.type].split('/').pop()}`)!;
    const ok = validate(source) as boolean;
    expect(ok ? [] : validate.errors).toEqual([]);
    return source;
  };

  it.each([
    ['apple_pay', VISA_DPAN, 'applepay'],
    ['google_pay', MASTERCARD_DPAN, 'googlepay'],
    ['merchant', VISA_DPAN, 'vts'],
    ['merchant', MASTERCARD_DPAN, 'mdes'],
  ] as const)('%s %s: token_type %s, with the cryptogram and the ECI', (source, dpan, tokenType) => {
    const sent = checkoutSource(request(dpan, { source, cryptogram: CRYPTOGRAM, eci: '05' }));
    expect(valid(sent)).toEqual({
      type: 'network_token',
      token: dpan,
      expiry_month: 6,
      expiry_year: 2031,
      token_type: tokenType,
      cryptogram: CRYPTOGRAM,
      eci: '05',
    });
  });

  it('an ECI the wallet did not give: 07, and 02 for Mastercard (the schema requires one)', () => {
    expect(valid(checkoutSource(request(VISA_DPAN, { cryptogram: CRYPTOGRAM }))).eci).toBe('07');
    expect(valid(checkoutSource(request(MASTERCARD_DPAN, { cryptogram: CRYPTOGRAM }))).eci).toBe('02');
  });

  it('without a cryptogram, or a scheme with no token_type: the DPAN as a stored card, no CVV', () => {
    for (const r of [
      request(VISA_DPAN, { source: 'apple_pay' }, { cvc: '123' }),
      request(AMEX_DPAN, { source: 'merchant', cryptogram: CRYPTOGRAM }),
    ]) {
      const sent = valid(checkoutSource(r));
      expect(sent).toMatchObject({ type: 'card', number: r.card.number, stored: true });
      expect(JSON.stringify(sent)).not.toMatch(/cvv|cryptogram/);
    }
  });
});

describe('adyen-card: networkToken with mpiData', () => {
  const doc = JSON.parse(readFileSync(join(SPECS, 'adyen-checkout-v71.json'), 'utf8')) as Json;
  const properties = (schema: string) => Object.keys(doc.components.schemas[schema].properties as Json);

  it("a wallet's cryptogram as the token authentication verification value, authenticated (Y, Y)", () => {
    const token = networkTokenOf(request(VISA_DPAN, { cryptogram: CRYPTOGRAM, eci: '05' }))!;
    const mpiData = networkTokenMpiData({ ...token, cryptogram: CRYPTOGRAM });
    expect(mpiData).toEqual({
      tokenAuthenticationVerificationValue: CRYPTOGRAM,
      eci: '05',
      directoryResponse: 'Y',
      authenticationResponse: 'Y',
    });
    expect(properties('ThreeDSecureData')).toEqual(expect.arrayContaining(Object.keys(mpiData)));
    expect(doc.components.schemas.CardDetails.properties.type.enum).toContain('networkToken');
  });

  it("a merchant's token: the cryptogram and its ECI only; brands as Adyen names them", () => {
    const token = networkTokenOf(request(MASTERCARD_DPAN, { source: 'merchant', cryptogram: CRYPTOGRAM }))!;
    expect(networkTokenMpiData({ ...token, cryptogram: CRYPTOGRAM })).toEqual({
      tokenAuthenticationVerificationValue: CRYPTOGRAM,
    });
    expect(ADYEN_BRANDS[token.scheme!]).toBe('mc');
  });

  it('without a cryptogram: ContAuth, with the stored-credential model', () => {
    expect(storedTokenInteraction(request(VISA_DPAN, {}))).toEqual({
      shopperInteraction: 'ContAuth',
      recurringProcessingModel: 'CardOnFile',
    });
    expect(
      storedTokenInteraction(request(VISA_DPAN, {}, { paymentSource: 'recurring', merchantInitiated: true })),
    ).toEqual({ shopperInteraction: 'ContAuth', recurringProcessingModel: 'Subscription' });
  });
});

describe('braintree-card: tokenizeNetworkToken', () => {
  const schema = buildSchema(readFileSync(join(SPECS, 'braintree-graphql.graphql'), 'utf8'));
  /** The variables coerced against the operation's input types, as Braintree's server does. */
  const coerced = (operation: keyof typeof BRAINTREE_OPERATIONS, variables: Json) => {
    const definition = parse(BRAINTREE_OPERATIONS[operation]).definitions.find(
      (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
    )!;
    const result = getVariableValues(schema, definition.variableDefinitions ?? [], variables);
    expect(result.errors ?? []).toEqual([]);
    return result.coerced;
  };

  it.each([
    ['apple_pay', 'APPLE_PAY'],
    ['google_pay', 'GOOGLE_PAY'],
    ['merchant', 'NETWORK_TOKEN'],
  ] as const)('%s: NetworkTokenInput with origin %s', (source, origin) => {
    const t = braintreeTokenizing(request(VISA_DPAN, { source, cryptogram: CRYPTOGRAM, eci: '05' }));
    expect(t.operation).toBe('TokenizeNetworkToken');
    expect(coerced(t.operation, t.variables)).toEqual({
      input: {
        networkToken: {
          number: VISA_DPAN,
          expirationMonth: '06',
          expirationYear: '2031',
          cryptogram: CRYPTOGRAM,
          eCommerceIndicator: '05',
          originDetails: { origin },
        },
      },
    });
  });

  it('without a cryptogram (required by NetworkTokenInput): the DPAN as a credit card, no CVV', () => {
    const t = braintreeTokenizing(request(VISA_DPAN, { source: 'google_pay' }, { cvc: '123' }));
    expect(t.operation).toBe('TokenizeCreditCard');
    expect(coerced(t.operation, t.variables)).toEqual({
      input: { creditCard: { number: VISA_DPAN, expirationMonth: '06', expirationYear: '2031' } },
    });
  });
});

describe('stripe-card: the DPAN as the card, its network named', () => {
  it('payment_method_options.card.network for a network token; nothing for a card', () => {
    const r = request(MASTERCARD_DPAN, { cryptogram: CRYPTOGRAM, eci: '02' });
    expect(cardOptions(r, networkTokenOf(r))).toEqual({
      payment_method_options: { card: { network: 'mastercard' } },
    });
    expect(JSON.stringify(cardOptions(r, networkTokenOf(r)))).not.toContain(CRYPTOGRAM);
    expect(cardOptions(request(VISA_DPAN), undefined)).toEqual({});
  });
});

describe('sandbox processors: network tokens by the DPAN', () => {
  it('follow the test card table', async () => {
    const processors = await Test.createTestingModule({
      providers: [{ provide: AppConfig, useValue: loadConfig({}) }, ...PROCESSOR_PROVIDERS],
    }).compile();
    const p = processors.get(ProcessorRegistry).for({ formulaId: 'checkout-card', environment: 'sandbox' });
    const token = { source: 'apple_pay' as const, cryptogram: CRYPTOGRAM, eci: '05' };
    expect((await p.authorize(request('4242424242424242', token))).outcome).toBe('approved');
    expect(await p.authorize(request('4000000000009995', token))).toMatchObject({
      outcome: 'declined',
      errorCode: 'insufficient_funds',
    });
  });
});
