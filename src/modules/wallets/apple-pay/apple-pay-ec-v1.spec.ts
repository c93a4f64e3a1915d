import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplePaySender } from '../../../../test/support/wallets/apple-pay-sender';
import {
  certificateFacts,
  certificateSigningRequest,
  generateMerchantKeyPair,
} from '../merchant-key-material';
import { WalletError } from '../wallet-error';
import { decryptApplePay, publicKeyHashOf, verifyApplePay } from './apple-pay-ec-v1';

const MERCHANT_ID = 'merchant.com.example.shop';

let sender: ApplePaySender;
let roots: X509Certificate[];
const pair = generateMerchantKeyPair();
let certificatePem: string;
const merchant = () => ({
  privateKey: createPrivateKey({ key: pair.privateKey, format: 'der', type: 'pkcs8' }),
  merchantIdHash: Buffer.from(
    certificateFacts(certificatePem, pair.publicKey, new Date()).merchantIdentifier,
    'hex',
  ),
});

beforeAll(async () => {
  sender = await ApplePaySender.create();
  roots = [new X509Certificate(sender.rootPem)];
  const csr = await certificateSigningRequest(pair, 'spec');
  certificatePem = await sender.issueMerchantCertificate(csr, MERCHANT_ID);
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof WalletError) return error.code;
    throw error;
  }
  return 'accepted';
}

describe('Apple Pay EC_v1', () => {
  it('ships Apple Root CA - G3 with its published fingerprint', () => {
    const pem = readFileSync(join(__dirname, 'apple-root-ca-g3.pem'), 'utf8');
    expect(new X509Certificate(pem).fingerprint256).toBe(
      '63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79',
    );
  });

  it('verifies and decrypts what the sender made for the merchant', async () => {
    const payment = await sender.paymentData({ certificatePem, merchantId: MERCHANT_ID }, { eci: '5' });
    const verified = await verifyApplePay(payment, { roots, now: new Date() });
    expect(verified.header.publicKeyHash).toBe(publicKeyHashOf(pair.publicKey));
    expect(verified.header.transactionId).toBe((payment.header as { transactionId: string }).transactionId);
    expect(decryptApplePay(verified, merchant())).toEqual({
      number: '4111111111111111',
      expirationMonth: 12,
      expirationYear: 2030,
      cryptogram: 'AOXLmDd4ZbRGAAGC7gUnAoABFA==',
      eci: '5',
    });
  });

  it('records the hex SHA-256 of the merchant id from the certificate', () => {
    expect(certificateFacts(certificatePem, pair.publicKey, new Date()).merchantIdentifier).toBe(
      createHash('sha256').update(MERCHANT_ID).digest('hex'),
    );
  });

  it('refuses another root, a bad signature, a stale or expired signer, with fixed codes', async () => {
    const target = { certificatePem, merchantId: MERCHANT_ID };
    const now = new Date();
    const other = await ApplePaySender.create();
    expect(
      await codeOf(
        verifyApplePay(await sender.paymentData(target), {
          roots: [new X509Certificate(other.rootPem)],
          now,
        }),
      ),
    ).toBe('wallet_signature_invalid');
    expect(
      await codeOf(verifyApplePay(await sender.paymentData(target, { badSignature: true }), { roots, now })),
    ).toBe('wallet_signature_invalid');
    const stale = await sender.paymentData(target, { signingTime: new Date(now.getTime() - 6 * 60_000) });
    expect(await codeOf(verifyApplePay(stale, { roots, now }))).toBe('wallet_expired');
    const expired = await ApplePaySender.create({ expiredIntermediate: true });
    expect(
      await codeOf(
        verifyApplePay(await expired.paymentData(target), {
          roots: [new X509Certificate(expired.rootPem)],
          now,
        }),
      ),
    ).toBe('wallet_expired');
    expect(await codeOf(verifyApplePay({ version: 'EC_v1' }, { roots, now }))).toBe('wallet_payload_invalid');
    expect(await codeOf(verifyApplePay('nope', { roots, now }))).toBe('wallet_payload_invalid');
  });

  it('refuses a ciphertext or tag that fails once the signature verified', async () => {
    for (const corrupt of ['ciphertext', 'tag'] as const) {
      const payment = await sender.paymentData({ certificatePem, merchantId: MERCHANT_ID }, { corrupt });
      const verified = await verifyApplePay(payment, { roots, now: new Date() });
      expect(() => decryptApplePay(verified, merchant())).toThrow(new WalletError('wallet_payload_invalid'));
    }
  });
});
