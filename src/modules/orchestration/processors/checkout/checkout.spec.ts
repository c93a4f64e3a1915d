import { createHmac } from 'node:crypto';
import { checkoutSignatureValid } from './checkout-signature';
import { ProcessorUnavailable } from '../processor-calls';
import {
  authorizeResult,
  CHECKOUT_RESPONSE_CODES,
  cvvCode,
  declineCode,
  errorCodeOf,
} from './checkout-results';
import { CheckoutProcessor } from './checkout.processor';

const PAY = 'pay_abcdefghijklmnopqrstuvwxyz';
const SOFT = new Set(['declined', 'service_error']);

describe('checkout-card response codes', () => {
  it('generic and do-not-honour declines are the soft `declined`; the rest are hard codes of their own', () => {
    expect(declineCode('20005')).toBe('declined');
    expect(declineCode('20001')).toBe('declined');
    expect(declineCode('20051')).toBe('insufficient_funds');
    expect(declineCode('30043')).toBe('lost_or_stolen');
    expect(declineCode('30041')).toBe('lost_or_stolen');
    expect(declineCode('20014')).toBe('invalid_card_number');
    expect(declineCode('20059')).toBe('fraudulent');
    expect(declineCode('20054')).toBe('expired_card');
    expect(declineCode('20062')).toBe('card_blocked');
    expect(declineCode('20057')).toBe('not_permitted');
    expect(declineCode('20091')).toBe('service_error');
    expect(declineCode('20999')).toBe('refused_20999');
    expect(declineCode('<script>')).toBe('refused');
    // Only the generic refusals and the issuer's outages are soft.
    const soft = Object.entries(CHECKOUT_RESPONSE_CODES).filter(([, c]) => SOFT.has(c));
    expect(soft.map(([code]) => code).sort()).toEqual(
      ['20001', '20002', '20005', '20019', '20022', '20046', '20068', '20091', '20096', '200N0'].sort(),
    );
  });

  it('maps a payment answer: approved (captured with intent capture), declined with its code, a 3-D Secure redirect', () => {
    const approved = {
      id: PAY,
      status: 'Authorized',
      approved: true,
      response_code: '10000',
      scheme_id: '123456789012345',
      source: { cvv_check: 'Y' },
    };
    expect(authorizeResult(approved, { cvcSent: true, capture: true })).toMatchObject({
      outcome: 'approved',
      captured: true,
      connectionTransactionId: PAY,
      schemeTransactionId: '123456789012345',
      cvvResponseCode: 'match',
    });
    expect(
      authorizeResult(
        {
          ...approved,
          approved: false,
          status: 'Declined',
          response_code: '20087',
          source: { cvv_check: 'N' },
        },
        { cvcSent: true, capture: false },
      ),
    ).toMatchObject({
      outcome: 'declined',
      errorCode: 'incorrect_cvv',
      authResponseCode: '20087',
      cvvResponseCode: 'no_match',
      schemeTransactionId: null,
    });
    expect(
      authorizeResult(
        { id: PAY, status: 'Pending', _links: { redirect: { href: 'https://3ds.example/x' } } },
        { cvcSent: false, capture: false },
      ),
    ).toMatchObject({
      outcome: 'challenge',
      vendorAction: { url: 'https://3ds.example/x' },
    });
    // Pending without a page to send the buyer to: decided later, as an unanswered call.
    expect(() => authorizeResult({ id: PAY, status: 'Pending' }, { cvcSent: false, capture: false })).toThrow(
      ProcessorUnavailable,
    );
    expect(cvvCode('Y', false)).toBe('not_provided');
    expect(cvvCode('U', true)).toBe('unavailable');
  });

  it('4xx answers: credentials, an invalid card number, other codes (never a value from the request)', () => {
    expect(errorCodeOf(401, {})).toBe('checkout_unauthorized');
    expect(errorCodeOf(422, { error_codes: ['card_number_invalid', 'cvv_invalid'] })).toBe(
      'invalid_card_number',
    );
    expect(errorCodeOf(422, { error_codes: ['amount_invalid'] })).toBe('checkout_amount_invalid');
    expect(errorCodeOf(422, { error_codes: ['4242 4242 4242 4242'] })).toBe('invalid_request');
  });
});

describe('checkout-card hooks', () => {
  const processor = new CheckoutProcessor({
    environment: 'test',
    baseUrl: undefined,
    publicBaseUrl: 'https://vault.example',
    notificationTimeoutMs: 1000,
  });

  it('a processing channel id must look like one; the value is not echoed', () => {
    expect(
      processor.checkFields(new Map([['processing_channel_id', 'pc_q4dbxom5jbgudnjzjpz7j2z6uq']])),
    ).toEqual({});
    const problems = processor.checkFields(new Map([['processing_channel_id', 'secret-looking value']]));
    expect(Object.keys(problems)).toEqual(['processing_channel_id']);
    expect(JSON.stringify(problems)).not.toContain('secret-looking');
  });

  it('a return from the 3-D Secure page carries a session id, for a payment Checkout.com named', () => {
    expect(processor.returnMatches({ 'cko-session-id': 'sid_abcdefghijklmnopqrstuvwxyz' }, PAY)).toBe(true);
    expect(processor.returnMatches({ 'cko-session-id': 'sid_abcdefghijklmnopqrstuvwxyz' }, null)).toBe(false);
    expect(processor.returnMatches({ 'cko-session-id': 'nope' }, PAY)).toBe(false);
    expect(processor.returnMatches({}, PAY)).toBe(false);
  });
});

describe('Cko-Signature', () => {
  it('is the lowercase hex HMAC-SHA256 of the raw body under the webhook secret (RFC 4231 test case 2)', () => {
    const body = Buffer.from('what do ya want for nothing?');
    const rfc4231 = '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843';
    expect(checkoutSignatureValid(body, rfc4231, 'Jefe')).toBe(true);
    expect(checkoutSignatureValid(body, rfc4231.toUpperCase(), 'Jefe')).toBe(false);
    expect(checkoutSignatureValid(body, rfc4231, 'jefe')).toBe(false);
    expect(checkoutSignatureValid(Buffer.from('what do ya want for nothing!'), rfc4231, 'Jefe')).toBe(false);
    expect(checkoutSignatureValid(body, undefined, 'Jefe')).toBe(false);
    expect(checkoutSignatureValid(body, rfc4231, '')).toBe(false);
  });

  it('a vector computed here with node:crypto over a webhook body', () => {
    const raw = Buffer.from('{"type":"payment_captured","data":{"reference":"abc"}}');
    const secret = 'whsec_checkout_test';
    const signature = createHmac('sha256', secret).update(raw).digest('hex');
    expect(checkoutSignatureValid(raw, signature, secret)).toBe(true);
    expect(
      checkoutSignatureValid(raw, signature.slice(0, 63) + (signature[63] === '0' ? '1' : '0'), secret),
    ).toBe(false);
  });
});
