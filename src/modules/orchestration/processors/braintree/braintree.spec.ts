import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSchema, Kind, NoDeprecatedCustomRule, parse, specifiedRules, validate } from 'graphql';
import { basicAuthorization, braintreeUrl, refusalCode } from './braintree-api';
import { BRAINTREE_OPERATIONS } from './braintree-operations';
import { isGraphQLPaymentMethodId } from './braintree-payment-methods';
import {
  braintreeAmount,
  BraintreeTransaction,
  gatewayRejectionCode,
  processorDeclineCode,
  transactionResult,
} from './braintree-results';
import { ProcessorUnavailable } from '../processor-calls';

/** Braintree's published schema, held under test/vendor-specs (test/vendor-specs/README.md). */
const SCHEMA_PATH = join(__dirname, '../../../../../test/vendor-specs/braintree-graphql.graphql');

describe('braintree-card operations against Braintree’s schema', () => {
  const schema = buildSchema(readFileSync(SCHEMA_PATH, 'utf8'));

  it.each(Object.entries(BRAINTREE_OPERATIONS))(
    '%s validates, without a deprecated field',
    (name, document) => {
      const parsed = parse(document);
      expect(validate(schema, parsed, [...specifiedRules, NoDeprecatedCustomRule])).toEqual([]);
      const operations = parsed.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
      expect(operations.map((o) => ('name' in o ? o.name?.value : undefined))).toEqual([name]);
    },
  );

  it('a negative control is refused (there is no voidTransaction; vaultPaymentMethod is not used)', () => {
    const errors = validate(
      schema,
      parse('mutation { voidTransaction(input: {transactionId: "x"}) { id } }'),
    );
    expect(errors.length).toBeGreaterThan(0);
    for (const document of Object.values(BRAINTREE_OPERATIONS))
      expect(document).not.toMatch(/vaultPaymentMethod|voidTransaction/);
  });
});

describe('braintree-card amounts, codes and endpoints', () => {
  it('amounts are the Amount scalar in the currency’s exponent', () => {
    expect(braintreeAmount(1299, 'USD')).toBe('12.99');
    expect(braintreeAmount(5, 'EUR')).toBe('0.05');
    expect(braintreeAmount(100000, 'GBP')).toBe('1000.00');
    expect(braintreeAmount(500, 'JPY')).toBe('500');
    expect(braintreeAmount(1234, 'KWD')).toBe('1.234');
    expect(braintreeAmount(0, 'USD')).toBe('0.00');
  });

  it('endpoints: sandbox for test, production for live, <base>/graphql when overridden', () => {
    expect(braintreeUrl(undefined, 'test')).toBe('https://payments.sandbox.braintree-api.com/graphql');
    expect(braintreeUrl(undefined, 'live')).toBe('https://payments.braintree-api.com/graphql');
    expect(braintreeUrl('http://127.0.0.1:9', 'live')).toBe('http://127.0.0.1:9/graphql');
    expect(basicAuthorization({ public_key: 'pub', private_key: 'priv' })).toBe(
      `Basic ${Buffer.from('pub:priv').toString('base64')}`,
    );
  });

  it('processor declines: generic ones are soft `declined`, the rest hard with their own codes', () => {
    expect(['2000', '2038', '2046'].map(processorDeclineCode)).toEqual(['declined', 'declined', 'declined']);
    expect(processorDeclineCode('2001')).toBe('insufficient_funds');
    expect(processorDeclineCode('2004')).toBe('expired_card');
    expect(processorDeclineCode('2005')).toBe('invalid_card_number');
    expect(processorDeclineCode('2010')).toBe('incorrect_cvv');
    expect(processorDeclineCode('2012')).toBe('lost_or_stolen');
    expect(processorDeclineCode('2013')).toBe('lost_or_stolen');
    expect(processorDeclineCode('2014')).toBe('fraudulent');
    expect(processorDeclineCode('2015')).toBe('not_permitted');
    expect(processorDeclineCode('2047')).toBe('card_blocked');
    expect(processorDeclineCode('2099')).toBe('refused_2099');
    expect(processorDeclineCode('not a code')).toBe('refused');
    expect(gatewayRejectionCode('FRAUD')).toBe('fraudulent');
    expect(gatewayRejectionCode('CVV')).toBe('incorrect_cvv');
    expect(gatewayRejectionCode('APPLICATION_INCOMPLETE')).toBe('gateway_rejected_application_incomplete');
    expect(gatewayRejectionCode('<script>')).toBe('gateway_rejected');
  });

  it('a refusal is named by its class and legacy code, never by Braintree’s message', () => {
    expect(refusalCode({ ok: false, status: 200, errorClass: 'VALIDATION', legacyCode: '91506' })).toBe(
      'braintree_validation_91506',
    );
    expect(refusalCode({ ok: false, status: 401, errorClass: 'AUTHENTICATION', legacyCode: null })).toBe(
      'braintree_authentication',
    );
  });

  const tx = (status: string, history: BraintreeTransaction['statusHistory'] = []): BraintreeTransaction => ({
    id: 'dHJhbnNhY3Rpb25fYWJj',
    status,
    statusHistory: history,
    paymentMethodSnapshot: {
      __typename: 'CreditCardTransactionDetails',
      networkTransactionId: '123456789012345',
    },
  });

  it('a transaction as an authorization’s outcome, from its status and statusHistory', () => {
    const authorized = transactionResult(
      tx('AUTHORIZED', [
        {
          __typename: 'AuthorizedEvent',
          status: 'AUTHORIZED',
          processorResponse: { legacyCode: '1000', cvvResponse: 'MATCHES' },
        },
      ]),
      true,
    );
    expect(authorized).toMatchObject({
      outcome: 'approved',
      captured: false,
      connectionTransactionId: 'dHJhbnNhY3Rpb25fYWJj',
      schemeTransactionId: '123456789012345',
      cvvResponseCode: 'match',
    });
    expect(transactionResult(tx('SUBMITTED_FOR_SETTLEMENT'), false)).toMatchObject({
      outcome: 'approved',
      captured: true,
      cvvResponseCode: 'not_provided',
    });
    const declined = transactionResult(
      tx('PROCESSOR_DECLINED', [
        {
          __typename: 'ProcessorDeclinedEvent',
          status: 'PROCESSOR_DECLINED',
          processorResponse: { legacyCode: '2001' },
        },
      ]),
      true,
    );
    expect(declined).toMatchObject({
      outcome: 'declined',
      errorCode: 'insufficient_funds',
      authResponseCode: '2001',
      schemeTransactionId: null,
    });
    expect(
      transactionResult(
        tx('GATEWAY_REJECTED', [
          { __typename: 'GatewayRejectedEvent', status: 'GATEWAY_REJECTED', gatewayRejectionReason: 'CVV' },
        ]),
        true,
      ),
    ).toMatchObject({ outcome: 'declined', errorCode: 'incorrect_cvv', cvvResponseCode: 'no_match' });
    expect(transactionResult(tx('FAILED'), false)).toMatchObject({
      outcome: 'failed',
      errorCode: 'service_error',
    });
    expect(() => transactionResult(tx('AUTHORIZING'), false)).toThrow(ProcessorUnavailable);
  });
});

describe('a processor’s token at Braintree', () => {
  it('tells a GraphQL payment method id from a legacy token (which idFromLegacyId converts)', () => {
    const id = Buffer.from('paymentmethod_cc_8b3xf5x').toString('base64');
    expect(isGraphQLPaymentMethodId(id)).toBe(true);
    for (const other of [
      '8b3xf5x',
      'tokencc_bc_string',
      Buffer.from('transaction_k2t64zeq').toString('base64'),
      `${id}!`,
    ])
      expect(isGraphQLPaymentMethodId(other)).toBe(false);
  });
});
