import { createPrivateKey, createPublicKey } from 'node:crypto';
import { newGooglePayRecipientKey } from '../../../../test/support/wallets/google-pay-sender';
import { WalletError } from '../wallet-error';
import { decryptGooglePayEcv2 } from './google-pay-ecv2';
import type { GooglePayRecipient, GooglePayRootKey } from './google-pay-ecv2';

const NOW = new Date('2026-11-29T12:00:00.000Z');

/** The code of the WalletError `run` throws (and that its message holds nothing of the payload). */
function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WalletError);
    expect((error as WalletError).message).not.toMatch(/4111|gateway|someRecipient|\{/);
    return (error as WalletError).code;
  }
  throw new Error('expected a WalletError');
}

/**
 * Published vectors: Tink's PaymentMethodTokenRecipientTest keys (the ECv2 root signing key, whose
 * private key also serves as the intermediate key there, and the merchant key pair), and tokens sealed
 * with Tink's sealECV2 for the recipient id "someRecipient", as published in the tests of
 * yoyowallet/google-pay-token-decryption. Another implementation's output: it checks the key derivation,
 * the signed strings and the byte layout against Google's own library.
 */
describe('Google Pay ECv2 against tokens made by Tink', () => {
  const TINK_ROOT_KEY_SPKI =
    'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE/1+3HBVSbdv+j7NaArdgMyoSAM43yRydzqdg1TxodSzA96Dj4Mc1EiKroxxunavVIvdxGnJeFViTzFvzFRxyCw==';
  const TINK_MERCHANT_PRIVATE_KEY_PKCS8 =
    'MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgCPSuFr4iSIaQprjjchHPyDu2NXFe0vDBoTpPkYaK9dehRANCAATnaFz/vQKuO90pxsINyVNWojabHfbx9qIJ6uD7Q7ZSxmtyo/Ez3/o2kDT8g0pIdyVIYktCsq65VoQIDWSh2Bdm';
  const tinkToken = (signature: string, signedKey: string, keySignature: string, signedMessage: string) =>
    JSON.stringify({
      signature,
      intermediateSigningKey: { signedKey, signatures: [keySignature] },
      protocolVersion: 'ECv2',
      signedMessage,
    });
  const intermediate = (expiration: string) =>
    `{"keyValue":"${TINK_ROOT_KEY_SPKI}","keyExpiration":"${expiration}"}`;

  /** A PAN_ONLY card; its intermediate key expires 2029-07-22, its message in the year 3000. */
  const VALID = tinkToken(
    'MEYCIQCbtFh9UIf1Ty3NKZ2z0ZmL0SHwR30uiRGuRXk9ghpyrwIhANiZQ0Df6noxkQ6M652PcIPkk2m1PQhqiq4UhzvPQOYf',
    intermediate('1879409613939'),
    'MEQCIFBle+JsfsovRBeoFEYKWFAeBYFAhq0S+GtusiosjV4lAiAGcK9qfVpnqG6Hw8cbGBQ79beiAs6IIkBxBfeKDBR+kA==',
    '{"encryptedMessage":"PeYi+ZnJs1Gei1dSOkItdfFG8Y81FvEI7dHE0sSrSU6OPnndftV/qDbbmXHmppoyP/2lhF+XsH93qzD3u46BRnxxPtetzGT0533rIraskTj8SZ6FVYY1Opfo7FECGk57FfF8aDaCSOoyTh1k0v6wdxVwEVvWqG1T/ij+u2KWOw5G1WSB/RVicni0Az13ModYb0KMdMws1USKlWxBfKU5PtxibVx4fZ95HYQ82qgHlV4ToKaUY7YWud1iEspmFsBMk0nh4t1hVxRzsxKUjMV1915qD5yq7k5n9YPao2mR9NJgLPDktsc4uf9bszzvnqhz3T1YID43QwX16yCyn/YxNVe3dJ1+S+BGyJ+vyKXp+Zh4SlIua2NFLwnR06Es3Kvl6LlOGasoPC/tMAWYLQlGsl+vHK3mrMZjC6KbOsXg+2mrlZwL+QOt3ih2jIPe","ephemeralPublicKey":"BD6pQKpy7yDebAX4qV0u/AfMYNQhOD+teyoa/5SsxwTGCoC1ZKHxNMb5BXvRmBcYGPNTx8+fAkEwzJ8GqbX/Q7E=","tag":"8gFteCvCuamX1RmL7ORdHqleyBf0N55OfAs80RYGgwc="}',
  );
  /** Its message expired. */
  const EXPIRED_MESSAGE = tinkToken(
    'MEUCIQCv+gDxUajhYqBcI2tt6zMCekinJsaYL31/aBtS74YN4QIgIZGFztAVTgyV2CB51NIfTtSzQBxNA52P4R8H7K5N/jE=',
    intermediate('1880104348293'),
    'MEUCIQDpPpV60rY2VLeDKcM3YNmAs+07Qsr8ZVoj8ZDNFcTCAQIgeVH3C/zUVWSIyd+/nO+AlMAemtcfUCX+71VWEF3T4yI=',
    '{"encryptedMessage":"eYKTj3VRk9b4EbvYped0pHvw8ZZTMqRtK6xZ1wzuvNHB3vQHrClYA5wZeujpzwM17SV9HpEzk1r2cKzZC+fpQpoLXk+XWjrPwKUGnPNDLW9aGcNVMqQZrspduLYnZ+SljnIxIBPS13APS70FUaEIj+WZ6HTe7rjhtPOFRJhs0LO5Q4PsGgkpK5d7hw6GNcpaFaVIolaFvHyg7spC9+U7F9fbOcDu1lCx67DjsKoiRPbToXfdu9mgPro0UT5RdTZGdydeijlKBwlv3xToq3M5w7xI2GyaPfvRrQmguADTlCLUL/g0IEYxWXDz/SvpKzU5olLP1lZ+Jpvu+Ah9HYhwyOAetMiCVSEolYjveKDJM0tRnixTOvWtQ1c9ezBkIjyl/iC3Kc+uDliswZeC7E6FHqb0sVs/IfImwO5kEdRgi138t6Ztl2Mvz1muMJ22avYw1wlhU6+46k+b8iirTD8WifVd2rEj19o6kMikFlo43rgz7aYtWNZnIFE//BSBy+eNvG0/aFrFdevrNiboxn++B1A=","ephemeralPublicKey":"BDMecFYEc1K+22fvcZImwfrRTa0r4Tiay/fFH3W+Ktnd/Zl1uiq4XwfvTfJwJB50elBmmyY43MdlyZjqiZjWJsw=","tag":"CW+gKSA9fvg4zX+9QBZwtmYcEvLGlTywopwWZIVZwhQ="}',
  );
  /** Its plaintext is the word "plaintext", not a message. */
  const NOT_A_MESSAGE = tinkToken(
    'MEUCIE9yZoaWuT+xS8GRAeFMhox/FYmmHaZqSjD/g4fJBBAeAiEAiuQzXoPWRSB6AhSD81q2bUOTLK4k+MntQx2UERk67fE=',
    intermediate('1880104972775'),
    'MEYCIQC70Y6VnxvXnwQ5HgJCD6HxPa2EMDCU6AVk6gAFi/A2TwIhAIvAbw5VShuO6uf8N0qJ8l8oVT3TMBX2Zv28+FKlvnRL',
    '{"encryptedMessage":"ssCh5UO4l4Xp","ephemeralPublicKey":"BKg85WIik76zjAKEFehNZ4seOh2/RX8WNPpX1gBzgQlsZCNYCj/2O8TsbDxYI2c9L5yBSpJOLy6AOE3q+5m3idg=","tag":"yRYHWOnuDsx6/KjS7axdL8YIPXuMnExw6FDldolRl+M="}',
  );
  /** Signed, but its tag is not the MAC of its ciphertext. */
  const BAD_TAG = tinkToken(
    'MEQCIGZJz6qTyiMeVzlwJ2FQtUUh5bfORrT7/ZW7iqtAOa7JAiBBOTPXLNr/gfgEmlAfUW6c7OpwriuYzW8SUMWNz6Qy3g==',
    intermediate('1880106295412'),
    'MEUCIQCJihoRFfDp170pXqtUn0u9eDX8pU5r06HzcSisttR+fwIgQH9ROgfNj69y3HSWOiSVGbSYQ/XD6kvWDHI43Qo9CpQ=',
    '{"encryptedMessage":"wFnzlFi/al6Kwk8/VFZp5R25WqN8eWQzRBZpjHbzDYMYeI97DeMEewI0BevsAgbQkJG03ktxOvUcFGjWVc/tePDBJUKYZDWwNosvRV4LgUkC7n7ByGntSJ/ekqXlm48UDAOPYchRTG6KvMdtYAfZQ5TbggbmLiJkvO55eHwyBHbgYiERJMQLh50QTp2peL7ZC7f8lBZ0Z3VWSEDLyFza93uadlzMEdhjXcgWwxIWAtxmMFvdLaXn0Crp7m0b90CfbcBSzsf4OeVbbUA8PoFhYJ9qjRErA+4MO+cXvtl3+AwiudVs3MtsvZX2Be/LniKHZoGNz34gn2+MTd9tGeiw3kRBYgwOVMciVcXtiq47XCcj5ttszfXctbNzuCS+MTDp0V3W0T/i9B2Vj6ocFFTOqvTz8AtMDfphXoSGAV+txv4S8iclFjKiMXHJw6dmI/deabisdXPoqAhpdfO3DGlO48NQF4Fwo0qUCwTdVeZ3HNYD0NYYKt6eKghdrXZFcDaE9FPs1xVFYUzJeupV2+Kpr9J9vA==","ephemeralPublicKey":"BC7Gy3uiwBWRh1qYRoJ8DhD05XSr2RjW2NcNIKXhxx1gfsp1BuET9uxaFvujKFTFSAPSYdYSRYB4mDzb7rO+12I=","tag":"AYcBmZRnlcPtU/t/CWUQJMDM6BjNEH3klAE1HxlvXPc="}',
  );
  /** Its intermediate key expired in 2013. */
  const EXPIRED_INTERMEDIATE = tinkToken(
    'MEQCIADUoxj1TKGFieh3aPn4rShKyM6bGtHi+SabRnvAlB33AiAIgjQIfZ7hMDOuxMXC/lrm4COrqH/PJ4vRtmBZn9438Q==',
    intermediate('1361023457681'),
    'MEYCIQD3fluX1fLwuuo/oCuyifmGM1xisLNylRZ5902dbjabSQIhAOuDBulLTtF5vuo6TxFBD/s3J4PqVzBC5y5d28Y4adsN',
    '{"encryptedMessage":"2aZvfZU49a0/Pi+Jl/1qFWK5faeDQvpWeXW+BcWDRVaYeqV4oAgfzp0Z0v6KPZMu/9bWeuHVRlymQruiqPHJlggCb3syo0HOz2ls59YEpTWfSZsWEGwhoiIbrrcZ953IQ1gxzaahYt6mAXIlHwAujhyqBcw8QdkzPgnr2PJhDHIGioy2u4iHnWHhvJkdcwbmtifd+pS/KDzN40ipFhaYwFPikRi9Br5vT1SEEbOH4UCY5ceJH3ZQJeaWCBYYrJU8ZpJjFXvOerRxLB995lNMHYDHV5jh5i3CMv7Sb4CjrVUy3ld7zhXOlDtRSbwze5aaFUqGjEIoIlwO56pB5qPCXAj/zjT67K5HGfx0/yc8hzT+RAc0lLCrIjBW9SWxPzq8hzhTWbsmI9hp8UcEO/H+EdlL0i8ENVXSRehCl7/LEEJKS3EBRR3h7W1ojZtl","ephemeralPublicKey":"BPxDq7BdXa7TBuY4PdlQVqfLjpgSNvC5TJgWZ6WetuR269iQHZVxohMbgUlHl1Hbs2JpXwPNpDLgzHOizvi+aAw=","tag":"IiMYvCc3gEvR4P3xhF5DaN/cyjOc++NJmqxthrbdc0U="}',
  );

  const rootKeys: GooglePayRootKey[] = [
    {
      protocolVersion: 'ECv2',
      publicKey: createPublicKey({
        key: Buffer.from(TINK_ROOT_KEY_SPKI, 'base64'),
        format: 'der',
        type: 'spki',
      }),
      keyExpiration: new Date('2100-01-01T00:00:00.000Z'),
    },
  ];
  const merchant: GooglePayRecipient = {
    recipientId: 'someRecipient',
    privateKey: createPrivateKey({
      key: Buffer.from(TINK_MERCHANT_PRIVATE_KEY_PKCS8, 'base64'),
      format: 'der',
      type: 'pkcs8',
    }),
    keyId: 'tink-merchant',
  };
  const decrypt = (value: string, recipients = [merchant]) =>
    decryptGooglePayEcv2(value, { rootKeys, recipients, now: NOW });

  it('decrypts Tink’s PAN_ONLY token', () => {
    expect(decrypt(VALID)).toEqual({
      keyId: 'tink-merchant',
      messageId:
        'AH2EjtfkY514K5lmPF4NOP9lMR5tPedsjQR719hIzI-zB1g0A-TBlYInGQuEVQeIWGlajqEpvSyrl3r_iN0RxoV9RYjxqnzG-kXmcBNkferp4NfNjVqxYrVT0e5JRzU3dQjkb0tQWOxN',
      messageExpiration: new Date(32506264800000),
      paymentMethod: 'CARD',
      paymentMethodDetails: {
        pan: '4111111111111111',
        expirationMonth: 12,
        expirationYear: 2026,
        authMethod: 'PAN_ONLY',
      },
    });
  });

  it('refuses it for another recipient id, or with a root key that signed nothing of it', () => {
    expect(codeOf(() => decrypt(VALID, [{ ...merchant, recipientId: 'notSomeRecipient' }]))).toBe(
      'wallet_signature_invalid',
    );
    const stranger = createPublicKey(newGooglePayRecipientKey().privateKey);
    expect(
      codeOf(() =>
        decryptGooglePayEcv2(VALID, {
          rootKeys: [{ ...rootKeys[0], publicKey: stranger }],
          recipients: [merchant],
          now: NOW,
        }),
      ),
    ).toBe('wallet_signature_invalid');
  });

  it('refuses it for a key the tenant does not hold', () => {
    expect(
      codeOf(() => decrypt(VALID, [{ ...merchant, privateKey: newGooglePayRecipientKey().privateKey }])),
    ).toBe('wallet_key_unknown');
  });

  it.each([
    ['an expired message', () => EXPIRED_MESSAGE, 'wallet_expired'],
    ['an expired intermediate key', () => EXPIRED_INTERMEDIATE, 'wallet_expired'],
    ['a plaintext that is not a message', () => NOT_A_MESSAGE, 'wallet_payload_invalid'],
    ['a tag that is not the ciphertext’s', () => BAD_TAG, 'wallet_payload_invalid'],
  ])('refuses Tink’s token with %s', (_what, value, code) => {
    expect(codeOf(() => decrypt(value()))).toBe(code);
  });
});
