import * as asn1js from 'asn1js';
import {
  createDecipheriv,
  createHash,
  createPublicKey,
  diffieHellman,
  type KeyObject,
  webcrypto,
  X509Certificate,
} from 'node:crypto';
import * as pkijs from 'pkijs';
import { WalletError } from '../wallet-error';

/**
 * Apple Pay `EC_v1` payment data (the `paymentData` of a `PKPaymentToken`), verified then decrypted as
 * Apple's payment token format reference describes it (docs/wallets.md, "What the vault checks"). Pure:
 * the roots, the time and the merchant key are given. Every refusal is a WalletError with a fixed code,
 * never a detail of the payload.
 */

/** Apple's marker extension of the leaf certificate that signs payment data. */
export const APPLE_LEAF_OID = '1.2.840.113635.100.6.29';
/** Apple's marker extension of the intermediate CA (Apple Application Integration CA - G3). */
export const APPLE_INTERMEDIATE_OID = '1.2.840.113635.100.6.2.14';
/** The merchant identifier field of a payment processing certificate: hex of SHA-256 of the merchant id. */
export const APPLE_MERCHANT_ID_OID = '1.2.840.113635.100.6.32';
/** How far a signing time may be from now, either way. */
export const SIGNING_TIME_TOLERANCE_MS = 5 * 60_000;

const SIGNING_TIME_OID = '1.2.840.113549.1.9.5';
const SIGNED_DATA_OID = '1.2.840.113549.1.7.2';
/** pkijs on Node's WebCrypto, named here rather than found on the global object. */
const ENGINE = new pkijs.CryptoEngine({
  name: 'node',
  crypto: webcrypto,
});

/** The header fields a verified payload carries. */
export interface ApplePayHeader {
  ephemeralPublicKey: Buffer;
  /** Base64 SHA-256 of the merchant certificate's SubjectPublicKeyInfo: which key to decrypt with. */
  publicKeyHash: string;
  /** Hex; unique per payment: the replay guard's key. */
  transactionId: string;
}

/** A payload whose signature verified: what decryption needs. */
export interface VerifiedApplePay {
  header: ApplePayHeader;
  data: Buffer;
  signingTime: Date;
}

/** The decrypted payment data's fields the vault uses (a 3-D Secure payload). */
export interface ApplePayCredential {
  /** The device PAN. */
  number: string;
  expirationMonth: number;
  expirationYear: number;
  cryptogram: string;
  eci?: string;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const HEX = /^(?:[0-9a-fA-F]{2})+$/;

const fail = (code: WalletError['code']): never => {
  throw new WalletError(code);
};

function base64Field(value: unknown): Buffer {
  if (typeof value !== 'string' || !BASE64.test(value) || value.length > 65_536)
    fail('wallet_payload_invalid');
  return Buffer.from(value as string, 'base64');
}

function hexField(value: unknown, optional = false): Buffer {
  if (optional && value === undefined) return Buffer.alloc(0);
  if (typeof value !== 'string' || !HEX.test(value) || value.length > 256) fail('wallet_payload_invalid');
  return Buffer.from(value as string, 'hex');
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The fields of `EC_v1` payment data, or wallet_payload_invalid. */
function parsePaymentData(paymentData: unknown) {
  if (!isObject(paymentData) || paymentData.version !== 'EC_v1' || !isObject(paymentData.header))
    return fail('wallet_payload_invalid');
  const { header } = paymentData;
  const data = base64Field(paymentData.data);
  const signature = base64Field(paymentData.signature);
  const ephemeralPublicKey = base64Field(header.ephemeralPublicKey);
  const publicKeyHash = base64Field(header.publicKeyHash);
  const transactionId = hexField(header.transactionId);
  const applicationData = hexField(header.applicationData, true);
  if (publicKeyHash.length !== 32 || data.length <= 16) fail('wallet_payload_invalid');
  return {
    data,
    signature,
    applicationData,
    header: {
      ephemeralPublicKey,
      publicKeyHash: publicKeyHash.toString('base64'),
      transactionId: transactionId.toString('hex'),
    },
    transactionIdBytes: transactionId,
  };
}

const hasExtension = (cert: pkijs.Certificate, oid: string): boolean =>
  (cert.extensions ?? []).some((extension) => extension.extnID === oid);

const derOf = (cert: pkijs.Certificate): Buffer => Buffer.from(cert.toSchema(true).toBER(false));

/** The CMS SignedData of the `signature` field, or wallet_signature_invalid. */
function signedDataOf(signature: Buffer): pkijs.SignedData {
  try {
    const info = pkijs.ContentInfo.fromBER(signature);
    if (info.contentType !== SIGNED_DATA_OID) return fail('wallet_signature_invalid');
    return new pkijs.SignedData({ schema: info.content });
  } catch (error) {
    if (error instanceof WalletError) throw error;
    return fail('wallet_signature_invalid');
  }
}

/** The signer's signing time (a signed attribute), or wallet_signature_invalid when it has none. */
function signingTimeOf(signer: pkijs.SignerInfo): Date {
  const attribute = signer.signedAttrs?.attributes.find((a) => a.type === SIGNING_TIME_OID);
  const value: unknown = attribute?.values[0];
  if (value instanceof asn1js.UTCTime || value instanceof asn1js.GeneralizedTime) return value.toDate();
  return fail('wallet_signature_invalid');
}

/**
 * The leaf and intermediate of the signature, chained to one of `roots`: each link's signature verifies,
 * the intermediate is a CA, Apple's marker extensions are there. Expired certificates: wallet_expired.
 */
function checkChain(
  signed: pkijs.SignedData,
  roots: readonly X509Certificate[],
  now: Date,
): pkijs.Certificate {
  const certificates = (signed.certificates ?? []).filter(
    (c): c is pkijs.Certificate => c instanceof pkijs.Certificate,
  );
  const leaf = certificates.find((c) => hasExtension(c, APPLE_LEAF_OID));
  const intermediate = certificates.find((c) => hasExtension(c, APPLE_INTERMEDIATE_OID));
  if (!leaf || !intermediate) return fail('wallet_signature_invalid');
  const leafX509 = new X509Certificate(derOf(leaf));
  const intermediateX509 = new X509Certificate(derOf(intermediate));
  const root = roots.find(
    (candidate) => intermediateX509.checkIssued(candidate) && intermediateX509.verify(candidate.publicKey),
  );
  if (!root || !intermediateX509.ca) return fail('wallet_signature_invalid');
  if (!leafX509.checkIssued(intermediateX509) || !leafX509.verify(intermediateX509.publicKey))
    return fail('wallet_signature_invalid');
  for (const cert of [leafX509, intermediateX509, root])
    if (now < new Date(cert.validFrom) || now > new Date(cert.validTo)) fail('wallet_expired');
  return leaf;
}

/**
 * Verifies Apple Pay `EC_v1` payment data before anything is decrypted: the detached CMS signature over
 * ephemeralPublicKey || data || transactionId || applicationData, made by a leaf certificate bearing
 * Apple's leaf OID, issued by an intermediate bearing Apple's intermediate OID, issued by one of `roots`;
 * and a signing time within 5 minutes of `now`.
 */
export async function verifyApplePay(
  paymentData: unknown,
  options: { roots: readonly X509Certificate[]; now: Date },
): Promise<VerifiedApplePay> {
  const parsed = parsePaymentData(paymentData);
  const signed = signedDataOf(parsed.signature);
  if (signed.signerInfos.length !== 1) fail('wallet_signature_invalid');
  const leaf = checkChain(signed, options.roots, options.now);
  const signer = signed.signerInfos[0];
  // The signer must be the leaf that carries Apple's OID, not another certificate of the bag.
  const sid = signer.sid as unknown;
  if (
    !(sid instanceof pkijs.IssuerAndSerialNumber) ||
    !sid.issuer.isEqual(leaf.issuer) ||
    !sid.serialNumber.isEqual(leaf.serialNumber)
  )
    fail('wallet_signature_invalid');
  const content = Buffer.concat([
    parsed.header.ephemeralPublicKey,
    parsed.data,
    parsed.transactionIdBytes,
    parsed.applicationData,
  ]);
  let verified: boolean;
  try {
    verified = await signed.verify(
      { signer: 0, data: new Uint8Array(content).buffer, checkChain: false },
      ENGINE,
    );
  } catch {
    verified = false;
  }
  if (!verified) fail('wallet_signature_invalid');
  const signingTime = signingTimeOf(signer);
  if (Math.abs(options.now.getTime() - signingTime.getTime()) > SIGNING_TIME_TOLERANCE_MS)
    fail('wallet_expired');
  return { header: parsed.header, data: parsed.data, signingTime };
}

/** Base64 SHA-256 of a SubjectPublicKeyInfo (DER): Apple's `publicKeyHash` of the key it encrypted to. */
export const publicKeyHashOf = (spki: Buffer): string => createHash('sha256').update(spki).digest('base64');

/**
 * The symmetric key: NIST SP 800-56A section 5.8.1's single-step KDF with SHA-256, one round (counter 1)
 * over Z, then OtherInfo = algorithm id (0x0D "id-aes256-GCM"), party U "Apple", party V the 32-byte
 * SHA-256 of the merchant id (the certificate's merchant identifier field, hex-decoded).
 */
export function appleSymmetricKey(sharedSecret: Buffer, merchantIdHash: Buffer): Buffer {
  return createHash('sha256')
    .update(Buffer.from([0, 0, 0, 1]))
    .update(sharedSecret)
    .update(Buffer.from([0x0d]))
    .update('id-aes256-GCM', 'latin1')
    .update('Apple', 'latin1')
    .update(merchantIdHash)
    .digest();
}

/** The P-256 ephemeral key of the header, or wallet_payload_invalid. */
function ephemeralKeyOf(spki: Buffer): KeyObject {
  try {
    const key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
    if (key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') return fail('wallet_payload_invalid');
    return key;
  } catch (error) {
    if (error instanceof WalletError) throw error;
    return fail('wallet_payload_invalid');
  }
}

/** The `applicationExpirationDate` (YYMMDD) as month and four-digit year. */
function expiryOf(value: unknown): { month: number; year: number } {
  if (typeof value !== 'string' || !/^\d{6}$/.test(value)) return fail('wallet_payload_invalid');
  const month = Number(value.slice(2, 4));
  if (month < 1 || month > 12) fail('wallet_payload_invalid');
  return { month, year: 2000 + Number(value.slice(0, 2)) };
}

/** The credential of decrypted payment data (a 3-D Secure payload), or wallet_payload_invalid. */
function credentialOf(plaintext: Buffer): ApplePayCredential {
  let decoded: unknown;
  try {
    decoded = JSON.parse(plaintext.toString('utf8'));
  } catch {
    return fail('wallet_payload_invalid');
  }
  if (!isObject(decoded) || decoded.paymentDataType !== '3DSecure' || !isObject(decoded.paymentData))
    return fail('wallet_payload_invalid');
  const { applicationPrimaryAccountNumber: number, paymentData } = decoded;
  const { onlinePaymentCryptogram: cryptogram, eciIndicator: eci } = paymentData;
  if (typeof number !== 'string' || !/^\d{12,19}$/.test(number)) fail('wallet_payload_invalid');
  if (typeof cryptogram !== 'string' || !BASE64.test(cryptogram)) fail('wallet_payload_invalid');
  if (eci !== undefined && (typeof eci !== 'string' || !/^\d{1,2}$/.test(eci)))
    fail('wallet_payload_invalid');
  const { month, year } = expiryOf(decoded.applicationExpirationDate);
  return {
    number: number as string,
    expirationMonth: month,
    expirationYear: year,
    cryptogram: cryptogram as string,
    ...(eci !== undefined ? { eci: eci as string } : {}),
  };
}

/**
 * Decrypts verified payment data with the merchant key it was encrypted to: ECDH with the ephemeral
 * key, the symmetric key (appleSymmetricKey), AES-256-GCM with a 16-byte zero IV (the last 16 bytes of
 * `data` are the tag). A ciphertext or tag that fails, or content that is not a 3-D Secure payload:
 * wallet_payload_invalid.
 */
export function decryptApplePay(
  verified: VerifiedApplePay,
  merchant: { privateKey: KeyObject; merchantIdHash: Buffer },
): ApplePayCredential {
  const ephemeral = ephemeralKeyOf(verified.header.ephemeralPublicKey);
  const shared = diffieHellman({ privateKey: merchant.privateKey, publicKey: ephemeral });
  const key = appleSymmetricKey(shared, merchant.merchantIdHash);
  const { data } = verified;
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.alloc(16));
    decipher.setAuthTag(data.subarray(data.length - 16));
    plaintext = Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]);
  } catch {
    return fail('wallet_payload_invalid');
  }
  return credentialOf(plaintext);
}
