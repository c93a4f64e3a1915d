import { AdyenProcessor } from './adyen.processor';
import { ADYEN_TEST_BASE_URL, AdyenConfigurationError, adyenBaseUrl } from './adyen-api';
import { adyenSignature, verifyAdyenSignature } from './adyen-hmac';
import { authorizeRefused, authorizeResult, cvvCode, refusalCode, serviceErrorCode } from './adyen-results';

describe('adyen-card: signatures', () => {
  // Adyen's documented example of a notification item and its HMAC key.
  const key = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
  const item = {
    pspReference: '7914073381342284',
    merchantAccountCode: 'TestMerchant',
    merchantReference: 'TestPayment-1407325143704',
    amount: { value: 1130, currency: 'EUR' },
    eventCode: 'AUTHORISATION',
    success: 'true',
  };

  it('signs the documented field order (absent originalReference as an empty field)', () => {
    expect(adyenSignature(item, key)).toBe('coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=');
  });

  it('verifies only the exact item under the exact key', () => {
    const signature = adyenSignature(item, key);
    expect(verifyAdyenSignature(item, signature, key)).toBe(true);
    expect(verifyAdyenSignature({ ...item, success: 'false' }, signature, key)).toBe(false);
    expect(verifyAdyenSignature({ ...item, amount: { value: 1131, currency: 'EUR' } }, signature, key)).toBe(
      false,
    );
    expect(verifyAdyenSignature(item, signature, key.replace('4', '5'))).toBe(false);
    expect(verifyAdyenSignature(item, undefined, key)).toBe(false);
    expect(verifyAdyenSignature(item, signature.slice(0, 20), key)).toBe(false);
    // A key that is not hexadecimal (or too short) verifies nothing, whatever the signature.
    expect(verifyAdyenSignature(item, adyenSignature(item, ''), '')).toBe(false);
    expect(verifyAdyenSignature(item, adyenSignature(item, 'abcd'), 'abcd')).toBe(false);
  });
});

describe('adyen-card: endpoints', () => {
  it('test is checkout-test v71; live needs a prefix that can only name an Adyen host; an override wins', () => {
    expect(adyenBaseUrl(undefined, 'test', {})).toBe(ADYEN_TEST_BASE_URL);
    expect(adyenBaseUrl(undefined, 'live', { live_endpoint_url_prefix: '1797a841fbb37ca7-AdyenDemo' })).toBe(
      'https://1797a841fbb37ca7-AdyenDemo-checkout-live.adyenpayments.com/checkout/v71',
    );
    for (const prefix of [undefined, '', 'evil.example#', 'a/b', 'x@evil.example', 'a b'])
      expect(() =>
        adyenBaseUrl(undefined, 'live', prefix === undefined ? {} : { live_endpoint_url_prefix: prefix }),
      ).toThrow(AdyenConfigurationError);
    expect(adyenBaseUrl('http://127.0.0.1:4010', 'live', {})).toBe('http://127.0.0.1:4010');
  });
});

describe('adyen-card: answers', () => {
  const options = { cvcSent: true, capture: false };

  it('Authorised approves, with the scheme reference and the CVC result; intent capture captures', () => {
    const response = {
      resultCode: 'Authorised',
      pspReference: 'PSP1',
      additionalData: { cvcResult: '1 Matches', networkTxReference: 'NTX1' },
    };
    expect(authorizeResult(response, options)).toMatchObject({
      outcome: 'approved',
      captured: false,
      connectionTransactionId: 'PSP1',
      schemeTransactionId: 'NTX1',
      cvvResponseCode: 'match',
    });
    expect(authorizeResult(response, { cvcSent: true, capture: true }).captured).toBe(true);
  });

  it.each([
    ['2', 'declined'],
    ['6', 'expired_card'],
    ['12', 'insufficient_funds'],
    ['24', 'incorrect_cvv'],
    [undefined, 'declined'],
  ])('Refused with refusalReasonCode %s declines as %s', (code, errorCode) => {
    const result = authorizeResult(
      {
        resultCode: 'Refused',
        pspReference: 'PSP2',
        refusalReasonCode: code,
        additionalData: { refusalCodeRaw: '05 : Do not honor' },
      },
      options,
    );
    expect(result).toMatchObject({ outcome: 'declined', errorCode, authResponseCode: '05' });
    if (errorCode === 'incorrect_cvv') expect(result.cvvResponseCode).toBe('no_match');
  });

  it('Error fails, Cancelled declines, an unknown code fails', () => {
    expect(authorizeResult({ resultCode: 'Error' }, options)).toMatchObject({
      outcome: 'failed',
      errorCode: 'service_error',
    });
    expect(authorizeResult({ resultCode: 'Cancelled' }, options).outcome).toBe('declined');
    expect(authorizeResult({ resultCode: 'PresentToShopper' }, options).outcome).toBe('failed');
  });

  it.each(['RedirectShopper', 'IdentifyShopper', 'ChallengeShopper'])(
    '%s with a GET redirect waits for the buyer; other actions cannot be completed',
    (resultCode) => {
      const url = 'https://checkoutshopper-test.adyen.com/checkoutshopper/threeDS/redirect?MD=x';
      expect(
        authorizeResult({ resultCode, action: { type: 'redirect', method: 'GET', url } }, options),
      ).toMatchObject({ outcome: 'challenge', vendorAction: { url } });
      for (const action of [
        { type: 'threeDS2', url },
        { type: 'redirect', method: 'POST', url, data: { PaReq: 'x' } },
        { type: 'redirect', method: 'GET', url: 'javascript:alert(1)' },
        { type: 'redirect', method: 'GET' },
      ])
        expect(authorizeResult({ resultCode, action }, options)).toMatchObject({
          outcome: 'failed',
          errorCode: 'unsupported_action',
        });
    },
  );

  it('Received and Pending are left to the notification (thrown as unanswered)', () => {
    expect(() => authorizeResult({ resultCode: 'Received' }, options)).toThrow('processor unavailable');
    expect(() => authorizeResult({ resultCode: 'Pending' }, options)).toThrow('processor unavailable');
  });

  it("CVC results, and Adyen's error codes named as Adyen's (never a value from the answer's text)", () => {
    expect(cvvCode('2 Does not match', true)).toBe('no_match');
    expect(cvvCode('0 Unknown', true)).toBe('unavailable');
    expect(cvvCode('1 Matches', false)).toBe('not_provided');
    expect(serviceErrorCode({ errorCode: '101', message: 'Invalid card number' })).toBe('adyen_101');
    expect(serviceErrorCode({ errorCode: '4111 1111 1111 1111' })).toBe('invalid_request');
    expect(serviceErrorCode({})).toBe('invalid_request');
    expect(authorizeRefused({ errorCode: '010' }, false)).toMatchObject({
      outcome: 'failed',
      errorCode: 'adyen_010',
      cvvResponseCode: 'not_provided',
    });
  });
});

describe('adyen-card: connection fields', () => {
  const processor = (environment: 'test' | 'live', baseUrl?: string) =>
    new AdyenProcessor({
      environment,
      baseUrl,
      publicBaseUrl: 'https://vault.example',
      notificationTimeoutMs: 1,
    });

  it('an HMAC key must be hexadecimal; a live connection needs a prefix that names an Adyen host', () => {
    expect(processor('test').checkFields(new Map([['hmac_key', 'AB'.repeat(32)]]))).toEqual({});
    expect(Object.keys(processor('test').checkFields(new Map([['hmac_key', 'secret']])))).toEqual([
      'hmac_key',
    ]);
    expect(Object.keys(processor('live').checkFields(new Map()))).toEqual(['live_endpoint_url_prefix']);
    expect(
      Object.keys(processor('live').checkFields(new Map([['live_endpoint_url_prefix', 'evil.example#']]))),
    ).toEqual(['live_endpoint_url_prefix']);
    expect(processor('live').checkFields(new Map([['live_endpoint_url_prefix', 'abc123-Company']]))).toEqual(
      {},
    );
    // Pointed elsewhere by VENDOR_BASE_URLS, the prefix is not used.
    expect(processor('live', 'http://127.0.0.1:4010').checkFields(new Map())).toEqual({});
  });
});

describe('adyen-card: refusal reason codes', () => {
  it.each([
    ['2', 'declined'],
    [undefined, 'declined'],
    ['6', 'expired_card'],
    ['12', 'insufficient_funds'],
    ['24', 'incorrect_cvv'],
    ['14', 'fraudulent'],
    ['20', 'fraudulent'],
    ['22', 'fraudulent'],
    ['31', 'fraudulent'],
    ['5', 'card_blocked'],
    ['25', 'card_blocked'],
    ['8', 'invalid_card_number'],
    ['10', 'not_permitted'],
    ['23', 'not_permitted'],
    ['27', 'refused_27'],
    ['x; drop', 'refused'],
  ])('%s -> %s (only a generic refusal is soft)', (code, expected) => {
    expect(refusalCode(code)).toBe(expected);
  });

  it("a lost or stolen card, told by the issuer's raw code", () => {
    expect(refusalCode('2', '41')).toBe('lost_or_stolen');
    expect(refusalCode('2', '43')).toBe('lost_or_stolen');
    expect(refusalCode('2', '05')).toBe('declined');
  });
});
