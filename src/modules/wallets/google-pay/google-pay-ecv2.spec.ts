import { createPublicKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GooglePayFault,
  GooglePayTestSender,
  newGooglePayRecipientKey,
} from '../../../../test/support/wallets/google-pay-sender';
import { ConfigError } from '../../../config/load-config';
import { WalletError } from '../wallet-error';
import { decryptGooglePayEcv2, loadGooglePayRootKeys } from './google-pay-ecv2';
import type { GooglePayRecipient, GooglePayRootKey } from './google-pay-ecv2';

const NOW = new Date('2026-11-29T12:00:00.000Z');
const DAY = 24 * 60 * 60 * 1000;
const GATEWAY_MERCHANT_ID = 'merchant-7';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'google-pay-ecv2-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The code of the WalletError `run` throws (and that its message holds nothing of the payload). */
function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WalletError);
    expect((error as WalletError).message).not.toMatch(/4111|gateway|merchant-7|\{/);
    return (error as WalletError).code;
  }
  throw new Error('expected a WalletError');
}

describe('Google Pay ECv2 against the independent test sender', () => {
  const sender = new GooglePayTestSender(new Date(NOW.getTime() + 365 * DAY));
  let rootKeys: GooglePayRootKey[];
  const merchant = newGooglePayRecipientKey();
  const recipient: GooglePayRecipient = {
    recipientId: `gateway:${GATEWAY_MERCHANT_ID}`,
    privateKey: merchant.privateKey,
    keyId: 'key-1',
  };

  beforeAll(() => {
    rootKeys = loadGooglePayRootKeys(sender.writeRootKeysFile(dir));
  });

  const token = (options: { fault?: GooglePayFault; authMethod?: 'PAN_ONLY' | 'CRYPTOGRAM_3DS' } = {}) =>
    sender.token({
      recipientPublicKey: merchant.publicKey,
      gatewayMerchantId: GATEWAY_MERCHANT_ID,
      now: NOW,
      pan: '4111111111111111',
      expirationMonth: 11,
      expirationYear: 2031,
      cryptogram: 'AgAAAAAABk4DWZ4C28yUQAAAAAA=',
      messageId: 'message-1',
      ...options,
    });
  const decrypt = (value: string, recipients = [recipient], now = NOW) =>
    decryptGooglePayEcv2(value, { rootKeys, recipients, now });

  it('loads the ECv2 root key of a file shaped as Google publishes them (the ECv1 key skipped)', () => {
    expect(rootKeys).toHaveLength(1);
    expect(rootKeys[0]).toMatchObject({
      protocolVersion: 'ECv2',
      keyExpiration: new Date(NOW.getTime() + 365 * DAY),
    });
  });

  it('decrypts a CRYPTOGRAM_3DS token: the DPAN, its expiry, cryptogram and ECI, and the key that opened it', () => {
    expect(decrypt(token())).toEqual({
      keyId: 'key-1',
      messageId: 'message-1',
      messageExpiration: new Date(NOW.getTime() + 60 * 60 * 1000),
      paymentMethod: 'CARD',
      paymentMethodDetails: {
        pan: '4111111111111111',
        expirationMonth: 11,
        expirationYear: 2031,
        authMethod: 'CRYPTOGRAM_3DS',
        cryptogram: 'AgAAAAAABk4DWZ4C28yUQAAAAAA=',
        eciIndicator: '05',
      },
    });
  });

  it('decrypts a CRYPTOGRAM_3DS token without an ECI (Google does not always send one)', () => {
    const value = sender.token({
      recipientPublicKey: merchant.publicKey,
      gatewayMerchantId: GATEWAY_MERCHANT_ID,
      now: NOW,
      eciIndicator: null,
    });
    const details = decrypt(value).paymentMethodDetails;
    expect(details.authMethod).toBe('CRYPTOGRAM_3DS');
    expect(details.cryptogram).toEqual(expect.any(String));
    expect(details).not.toHaveProperty('eciIndicator');
  });

  it('decrypts a PAN_ONLY token: the card, no cryptogram', () => {
    expect(decrypt(token({ authMethod: 'PAN_ONLY' })).paymentMethodDetails).toEqual({
      pan: '4111111111111111',
      expirationMonth: 11,
      expirationYear: 2031,
      authMethod: 'PAN_ONLY',
    });
  });

  it('tries every key of the recipient the message was signed for (rotation), and only those', () => {
    const older = { ...recipient, privateKey: newGooglePayRecipientKey().privateKey, keyId: 'key-0' };
    const elsewhere = {
      recipientId: 'gateway:another-merchant',
      privateKey: newGooglePayRecipientKey().privateKey,
      keyId: 'key-9',
    };
    expect(decrypt(token(), [elsewhere, older, recipient]).keyId).toBe('key-1');
  });

  it.each<[GooglePayFault, string]>([
    ['wrong_root', 'wallet_signature_invalid'],
    ['bad_intermediate_signature', 'wallet_signature_invalid'],
    ['bad_signature', 'wallet_signature_invalid'],
    ['other_recipient', 'wallet_signature_invalid'],
    ['expired_intermediate', 'wallet_expired'],
    ['expired_message', 'wallet_expired'],
    ['unknown_key', 'wallet_key_unknown'],
    ['tampered_ciphertext', 'wallet_payload_invalid'],
    ['tampered_tag', 'wallet_payload_invalid'],
    ['plaintext_not_json', 'wallet_payload_invalid'],
    ['wrong_protocol_version', 'wallet_payload_invalid'],
  ])('refuses a token with the fault %s: %s', (fault, code) => {
    expect(codeOf(() => decrypt(token({ fault })))).toBe(code);
  });

  it('refuses a token whose root key has expired: the chain does not verify', () => {
    expect(codeOf(() => decrypt(token(), [recipient], new Date(NOW.getTime() + 366 * DAY)))).toBe(
      'wallet_signature_invalid',
    );
  });

  it('refuses a token that reached no key: a tenant without Google Pay keys, or keys of another recipient', () => {
    expect(codeOf(() => decrypt(token(), []))).toBe('wallet_key_unknown');
    const rotatedAway = { ...recipient, privateKey: newGooglePayRecipientKey().privateKey, keyId: 'key-2' };
    expect(codeOf(() => decrypt(token(), [rotatedAway]))).toBe('wallet_key_unknown');
  });

  it('refuses a tampered ciphertext as payload_invalid when the right key is among several', () => {
    const other = { ...recipient, privateKey: newGooglePayRecipientKey().privateKey, keyId: 'key-2' };
    expect(codeOf(() => decrypt(token({ fault: 'tampered_tag' }), [other, recipient]))).toBe(
      'wallet_payload_invalid',
    );
  });

  it.each([
    ['is not JSON', 'nope'],
    ['is a JSON array', '[]'],
    [
      'has no intermediate signing key',
      JSON.stringify({ protocolVersion: 'ECv2', signature: 'AA==', signedMessage: '{}' }),
    ],
    [
      'has no signatures on its intermediate key',
      JSON.stringify({
        protocolVersion: 'ECv2',
        signature: 'AA==',
        signedMessage: '{}',
        intermediateSigningKey: { signedKey: '{}', signatures: [] },
      }),
    ],
  ])('refuses a token that %s: wallet_payload_invalid', (_what, value) => {
    expect(codeOf(() => decrypt(value))).toBe('wallet_payload_invalid');
  });

  it('accepts an intermediate key with several signatures, one of them by a root key', () => {
    const value = sender.token({
      recipientPublicKey: merchant.publicKey,
      gatewayMerchantId: GATEWAY_MERCHANT_ID,
      now: NOW,
      extraKeySignatures: [
        'not base64!',
        'MEUCIQDpPpV60rY2VLeDKcM3YNmAs+07Qsr8ZVoj8ZDNFcTCAQIgeVH3C/zUVWSIyd+/nO+AlMAemtcfUCX+71VWEF3T4yI=',
      ],
    });
    expect(decrypt(value).keyId).toBe('key-1');
  });

  const card = {
    pan: '4111111111111111',
    expirationMonth: 12,
    expirationYear: 2030,
    authMethod: 'CRYPTOGRAM_3DS',
    cryptogram: 'AgAAAAAABk4DWZ4C28yUQAAAAAA=',
  };
  const message = (fields: Record<string, unknown>, details: Record<string, unknown> = {}) =>
    JSON.stringify({
      messageExpiration: String(NOW.getTime() + 60_000),
      messageId: 'message-2',
      paymentMethod: 'CARD',
      paymentMethodDetails: { ...card, ...details },
      ...fields,
    });
  const sealing = (plaintext: string) =>
    sender.token({
      recipientPublicKey: merchant.publicKey,
      gatewayMerchantId: GATEWAY_MERCHANT_ID,
      now: NOW,
      plaintext,
    });

  it('reads a message Google wrote, ignoring the fields it does not use', () => {
    const value = sealing(message({ gatewayMerchantId: GATEWAY_MERCHANT_ID, somethingNew: true }));
    expect(decrypt(value)).toMatchObject({ messageId: 'message-2', paymentMethodDetails: card });
  });

  it.each([
    ['a JSON array', '[]'],
    ['a messageExpiration that is a number', message({ messageExpiration: NOW.getTime() + 60_000 })],
    ['no messageId', message({ messageId: undefined })],
    ['a payment method other than CARD', message({ paymentMethod: 'PAYPAL' })],
    ['no paymentMethodDetails', message({ paymentMethodDetails: undefined })],
    ['a PAN with letters', message({}, { pan: '4111x11111111111' })],
    ['a 13th month', message({}, { expirationMonth: 13 })],
    ['a two-digit year', message({}, { expirationYear: 30 })],
    ['an unknown auth method', message({}, { authMethod: 'FIDO' })],
    ['a CRYPTOGRAM_3DS without cryptogram', message({}, { cryptogram: undefined })],
    ['an ECI that is a number', message({}, { eciIndicator: 5 })],
  ])('refuses a validly sealed message with %s: wallet_payload_invalid', (_what, plaintext) => {
    expect(codeOf(() => decrypt(sealing(plaintext)))).toBe('wallet_payload_invalid');
  });

  it('judges expiry before the rest of the message', () => {
    const value = sealing(message({ messageExpiration: String(NOW.getTime()), paymentMethod: 'PAYPAL' }));
    expect(codeOf(() => decrypt(value))).toBe('wallet_expired');
  });

  it('refuses a signedMessage changed after Google signed it: wallet_signature_invalid', () => {
    const parsed = JSON.parse(token()) as { signedMessage: string };
    const sealed = JSON.parse(parsed.signedMessage) as Record<string, string>;
    const changed = JSON.stringify({ ...sealed, tag: Buffer.alloc(32).toString('base64') });
    expect(codeOf(() => decrypt(JSON.stringify({ ...parsed, signedMessage: changed })))).toBe(
      'wallet_signature_invalid',
    );
  });
});

describe('loadGooglePayRootKeys', () => {
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const spki = createPublicKey(newGooglePayRecipientKey().privateKey)
    .export({ format: 'der', type: 'spki' })
    .toString('base64');

  it.each([
    ['not JSON', '{', /is not JSON/],
    ['without a keys array', '{"keys": {}}', /"keys" array/],
    ['with an entry that is not an object', '{"keys": [1]}', /keys\[0\]/],
    [
      'with an ECv2 key that is not an EC P-256 key',
      '{"keys": [{"protocolVersion": "ECv2", "keyValue": "c2VjcmV0LWJ5dGVz", "keyExpiration": "1"}]}',
      /keys\[0\] whose keyValue/,
    ],
    [
      'with an ECv2 key without an expiration',
      `{"keys": [{"protocolVersion": "ECv2", "keyValue": "${spki}"}]}`,
      /keys\[0\] whose keyExpiration/,
    ],
    [
      'with no ECv2 key',
      `{"keys": [{"protocolVersion": "ECv1", "keyValue": "${spki}"}]}`,
      /holds no ECv2 key/,
    ],
  ])('refuses a file %s, naming the setting and never the key bytes', (_what, text, reason) => {
    const path = write('roots.json', text);
    let error: unknown;
    try {
      loadGooglePayRootKeys(path);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/^GOOGLE_PAY_ROOT_KEYS: /);
    expect(message).toMatch(reason);
    expect(message).not.toContain('c2VjcmV0LWJ5dGVz');
    expect(message).not.toContain(spki.slice(30, 60));
  });

  it('refuses a file that cannot be read, naming the setting', () => {
    expect(() => loadGooglePayRootKeys(join(dir, 'missing.json'))).toThrow(
      /^GOOGLE_PAY_ROOT_KEYS: .*missing\.json cannot be read$/,
    );
  });
});
