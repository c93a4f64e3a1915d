import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import * as asn1js from 'asn1js';
import {
  createCipheriv,
  createHash,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  randomBytes,
  webcrypto,
} from 'node:crypto';
import * as pkijs from 'pkijs';

/**
 * A stand-in for Apple's side of Apple Pay, for the tests: its own root CA, an intermediate and a
 * signing leaf bearing Apple's marker OIDs; a CA that issues payment processing certificates for a
 * merchant's CSR; and payment data encrypted to a merchant's certificate and signed as Apple signs it
 * (EC_v1). Written from Apple's payment token format reference, independently of the service's code
 * (it imports none of it), so that the two are checked against each other.
 */

type Crypto = Parameters<typeof x509.cryptoProvider.set>[1];
type CryptoKeyPair = webcrypto.CryptoKeyPair;
const CRYPTO = webcrypto as unknown as Crypto;
x509.cryptoProvider.set(CRYPTO);
const ENGINE = new pkijs.CryptoEngine({ name: 'sender', crypto: CRYPTO });

const ECDSA = { name: 'ECDSA', namedCurve: 'P-256' };
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' };
const LEAF_OID = '1.2.840.113635.100.6.29';
const INTERMEDIATE_OID = '1.2.840.113635.100.6.2.14';
const MERCHANT_ID_OID = '1.2.840.113635.100.6.32';
const DAY = 86_400_000;

interface Issued {
  certificate: x509.X509Certificate;
  keys: CryptoKeyPair;
}

/** Apple's marker extensions hold an ASN.1 NULL. */
const marker = (oid: string) => new x509.Extension(oid, false, new asn1js.Null().toBER(false));

async function issue(options: {
  subject: string;
  issuer?: Issued;
  ca: boolean;
  extensions?: x509.Extension[];
  notBefore: Date;
  notAfter: Date;
}): Promise<Issued> {
  const keys = await webcrypto.subtle.generateKey(ECDSA, true, ['sign', 'verify']);
  const issuer = options.issuer;
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: randomBytes(8)
      .toString('hex')
      .replace(/^[89a-f]/, '1'),
    subject: options.subject,
    issuer: issuer ? issuer.certificate.subject : options.subject,
    notBefore: options.notBefore,
    notAfter: options.notAfter,
    publicKey: keys.publicKey,
    signingKey: issuer ? issuer.keys.privateKey : keys.privateKey,
    signingAlgorithm: SIGNING,
    extensions: [
      new x509.BasicConstraintsExtension(options.ca, undefined, true),
      new x509.KeyUsagesExtension(
        options.ca
          ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign
          : x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      ...(options.extensions ?? []),
    ],
  });
  return { certificate, keys };
}

/** What a payment is made of: the card in the device and the request's facts. */
export interface ApplePayPayment {
  dpan?: string;
  /** YYMMDD. */
  expiration?: string;
  cryptogram?: string;
  eci?: string;
  transactionId?: string;
  /** When the signature says it was made; default now. */
  signingTime?: Date;
  /** Flip a bit of the ciphertext, or of the tag, before signing (the signature still verifies). */
  corrupt?: 'ciphertext' | 'tag';
  /** Flip a bit of the signature once made. */
  badSignature?: boolean;
}

/** A merchant as Apple knows it: its certificate (SPKI) and its merchant id. */
export interface MerchantTarget {
  certificatePem: string;
  merchantId: string;
}

export class ApplePaySender {
  private constructor(
    readonly root: Issued,
    private readonly intermediate: Issued,
    private readonly leaf: Issued,
  ) {}

  /** A sender with its own root; `expiredIntermediate`: the intermediate's validity ended yesterday. */
  static async create(options: { expiredIntermediate?: boolean } = {}): Promise<ApplePaySender> {
    const now = Date.now();
    const root = await issue({
      subject: 'CN=Test Apple Root CA - G3, O=Test Apple',
      ca: true,
      notBefore: new Date(now - 365 * DAY),
      notAfter: new Date(now + 3650 * DAY),
    });
    const intermediate = await issue({
      subject: 'CN=Test Apple Application Integration CA - G3, O=Test Apple',
      issuer: root,
      ca: true,
      extensions: [marker(INTERMEDIATE_OID)],
      notBefore: new Date(now - 30 * DAY),
      notAfter: new Date(now + (options.expiredIntermediate ? -DAY : 365 * DAY)),
    });
    const leaf = await issue({
      subject: 'CN=test-ecc-smp-broker-sign_UC4-PROD, O=Test Apple',
      issuer: intermediate,
      ca: false,
      extensions: [marker(LEAF_OID)],
      notBefore: new Date(now - 2 * DAY),
      notAfter: new Date(now + 300 * DAY),
    });
    return new ApplePaySender(root, intermediate, leaf);
  }

  /** The root as PEM: what APPLE_PAY_ROOT_CA names in the tests. */
  get rootPem(): string {
    return this.root.certificate.toString('pem');
  }

  /**
   * A payment processing certificate for a merchant's CSR, as Apple's developer account issues one: the
   * CSR's key, the merchant identifier field holding the hex SHA-256 of the merchant id (a UTF8String).
   */
  async issueMerchantCertificate(csrPem: string, merchantId: string): Promise<string> {
    const csr = new x509.Pkcs10CertificateRequest(csrPem);
    if (!(await csr.verify())) throw new Error('the CSR is not signed by its own key');
    const hash = createHash('sha256').update(merchantId, 'utf8').digest('hex');
    const certificate = await x509.X509CertificateGenerator.create({
      serialNumber: randomBytes(8)
        .toString('hex')
        .replace(/^[89a-f]/, '1'),
      subject: `0.9.2342.19200300.100.1.1=${merchantId}, CN=Apple Pay Payment Processing:${merchantId}, C=US`,
      issuer: this.intermediate.certificate.subject,
      notBefore: new Date(Date.now() - DAY),
      notAfter: new Date(Date.now() + 700 * DAY),
      publicKey: csr.publicKey,
      signingKey: this.intermediate.keys.privateKey,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.Extension(MERCHANT_ID_OID, false, new asn1js.Utf8String({ value: hash }).toBER(false)),
      ],
    });
    return certificate.toString('pem');
  }

  /** EC_v1 payment data for `merchant`, with the faults asked for. */
  async paymentData(
    merchant: MerchantTarget,
    payment: ApplePayPayment = {},
  ): Promise<Record<string, unknown>> {
    const certificate = new x509.X509Certificate(merchant.certificatePem);
    const merchantSpki = Buffer.from(certificate.publicKey.rawData);
    const merchantKey = createPublicKey({ key: merchantSpki, format: 'der', type: 'spki' });
    const ephemeral = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const z = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: merchantKey });
    // NIST SP 800-56A 5.8.1, one round: SHA-256(counter || Z || 0x0D "id-aes256-GCM" || "Apple" || SHA-256(merchant id)).
    const otherInfo = Buffer.concat([
      Buffer.from('0d', 'hex'),
      Buffer.from('id-aes256-GCM'),
      Buffer.from('Apple'),
      createHash('sha256').update(merchant.merchantId, 'utf8').digest(),
    ]);
    const key = createHash('sha256')
      .update(Buffer.concat([Buffer.from('00000001', 'hex'), z, otherInfo]))
      .digest();
    const plaintext = JSON.stringify({
      applicationPrimaryAccountNumber: payment.dpan ?? '4111111111111111',
      applicationExpirationDate: payment.expiration ?? '301231',
      currencyCode: '840',
      transactionAmount: 1000,
      deviceManufacturerIdentifier: '040010030273',
      paymentDataType: '3DSecure',
      paymentData: {
        onlinePaymentCryptogram: payment.cryptogram ?? 'AOXLmDd4ZbRGAAGC7gUnAoABFA==',
        ...(payment.eci !== undefined ? { eciIndicator: payment.eci } : { eciIndicator: '7' }),
      },
    });
    const cipher = createCipheriv('aes-256-gcm', key, Buffer.alloc(16));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    if (payment.corrupt === 'ciphertext') ciphertext[0] ^= 1;
    if (payment.corrupt === 'tag') tag[0] ^= 1;
    const data = Buffer.concat([ciphertext, tag]);
    const ephemeralSpki = ephemeral.publicKey.export({ format: 'der', type: 'spki' });
    const transactionId = payment.transactionId ?? randomBytes(32).toString('hex');
    const signed = Buffer.concat([ephemeralSpki, data, Buffer.from(transactionId, 'hex')]);
    let signature = await this.sign(signed, payment.signingTime ?? new Date());
    if (payment.badSignature) {
      signature = Buffer.from(signature);
      signature[signature.length - 5] ^= 1;
    }
    return {
      version: 'EC_v1',
      data: data.toString('base64'),
      signature: signature.toString('base64'),
      header: {
        ephemeralPublicKey: ephemeralSpki.toString('base64'),
        publicKeyHash: createHash('sha256').update(merchantSpki).digest('base64'),
        transactionId,
      },
    };
  }

  /** A detached CMS SignedData over `content` by the leaf, the chain's two certificates in its bag. */
  private async sign(content: Buffer, signingTime: Date): Promise<Buffer> {
    const leaf = pkijs.Certificate.fromBER(this.leaf.certificate.rawData);
    const intermediate = pkijs.Certificate.fromBER(this.intermediate.certificate.rawData);
    const digest = createHash('sha256').update(content).digest();
    const signedData = new pkijs.SignedData({
      version: 1,
      encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: '1.2.840.113549.1.7.1' }),
      certificates: [leaf, intermediate],
      signerInfos: [
        new pkijs.SignerInfo({
          version: 1,
          sid: new pkijs.IssuerAndSerialNumber({ issuer: leaf.issuer, serialNumber: leaf.serialNumber }),
          signedAttrs: new pkijs.SignedAndUnsignedAttributes({
            type: 0,
            attributes: [
              new pkijs.Attribute({
                type: '1.2.840.113549.1.9.3',
                values: [new asn1js.ObjectIdentifier({ value: '1.2.840.113549.1.7.1' })],
              }),
              new pkijs.Attribute({
                type: '1.2.840.113549.1.9.5',
                values: [new asn1js.UTCTime({ valueDate: signingTime })],
              }),
              new pkijs.Attribute({
                type: '1.2.840.113549.1.9.4',
                values: [new asn1js.OctetString({ valueHex: new Uint8Array(digest).buffer })],
              }),
            ],
          }),
        }),
      ],
    });
    await signedData.sign(this.leaf.keys.privateKey, 0, 'SHA-256', undefined, ENGINE);
    const info = new pkijs.ContentInfo({
      contentType: '1.2.840.113549.1.7.2',
      content: signedData.toSchema(true),
    });
    return Buffer.from(info.toSchema().toBER(false));
  }
}
