import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import * as asn1js from 'asn1js';
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  webcrypto,
} from 'node:crypto';
import { open, seal } from '../../common/crypto/aead';
import { ValidationException } from '../../common/errors/domain.exception';
import { APPLE_MERCHANT_ID_OID } from './apple-pay/apple-pay-ec-v1';

x509.cryptoProvider.set(webcrypto);

/**
 * A merchant key's material: an EC P-256 pair made here, its private half sealed under the tenant's key
 * (bound to the tenant and the key id), never answered, logged or audited.
 */
export interface MerchantKeyPair {
  /** PKCS #8 DER, in clear: sealed before it is stored, dropped after. */
  privateKey: Buffer;
  /** SubjectPublicKeyInfo DER. */
  publicKey: Buffer;
}

export function generateMerchantKeyPair(): MerchantKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }),
    publicKey: publicKey.export({ format: 'der', type: 'spki' }),
  };
}

const keyAad = (tenantId: string, keyId: string): string => `wallet-merchant-key:${tenantId}:${keyId}`;

export function sealMerchantKey(key: Buffer, tenantId: string, keyId: string, pkcs8: Buffer): Buffer {
  return seal(key, pkcs8, keyAad(tenantId, keyId));
}

export function openMerchantKey(key: Buffer, tenantId: string, keyId: string, sealed: Buffer): KeyObject {
  return createPrivateKey({ key: open(key, sealed, keyAad(tenantId, keyId)), format: 'der', type: 'pkcs8' });
}

/** The public key as Google's console takes it: base64 of the uncompressed point (0x04 || X || Y). */
export function uncompressedPoint(spki: Buffer): string {
  const jwk = createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({ format: 'jwk' });
  return Buffer.concat([
    Buffer.from([4]),
    Buffer.from(jwk.x as string, 'base64url'),
    Buffer.from(jwk.y as string, 'base64url'),
  ]).toString('base64');
}

/**
 * A PEM certificate signing request for the key, signed by it (ECDSA with SHA-256), as Apple's developer
 * account takes it for a payment processing certificate.
 */
export async function certificateSigningRequest(pair: MerchantKeyPair, keyId: string): Promise<string> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256' };
  const keys = {
    privateKey: await webcrypto.subtle.importKey('pkcs8', pair.privateKey, algorithm, false, ['sign']),
    publicKey: await webcrypto.subtle.importKey('spki', pair.publicKey, algorithm, true, ['verify']),
  };
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=Apple Pay payment processing ${keyId}`,
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
  });
  return csr.toString('pem');
}

/** What the vault keeps of an Apple Pay payment processing certificate. */
export interface CertificateFacts {
  /** Hex SHA-256 of the merchant id (the certificate's merchant identifier field), lower case. */
  merchantIdentifier: string;
  notAfter: Date;
  /** The certificate as PEM, normalized. */
  pem: string;
}

const refuse = (message: string): never => {
  throw ValidationException.field('certificate', message);
};

/** The text of the merchant identifier extension: a DER string holding 64 hex digits (or those digits bare). */
function merchantIdentifierOf(value: ArrayBuffer): string | undefined {
  const decoded = asn1js.fromBER(value);
  const text =
    decoded.offset !== -1 && decoded.result instanceof asn1js.BaseStringBlock
      ? decoded.result.getValue()
      : Buffer.from(value).toString('latin1');
  return /^[0-9a-fA-F]{64}$/.test(text) ? text.toLowerCase() : undefined;
}

/**
 * The facts of `pem` when it certifies the key whose public half is `publicKey` and carries Apple's
 * merchant identifier field; else a 400 naming `certificate` (never repeating what it holds).
 */
export function certificateFacts(pem: string, publicKey: Buffer, now: Date): CertificateFacts {
  let certificate: x509.X509Certificate;
  try {
    certificate = new x509.X509Certificate(pem);
  } catch {
    return refuse('certificate must be a PEM X.509 certificate');
  }
  if (!Buffer.from(certificate.publicKey.rawData).equals(publicKey))
    refuse("certificate is not for this merchant key (its public key is not the key's)");
  const extension = certificate.getExtension(APPLE_MERCHANT_ID_OID);
  const merchantIdentifier = extension ? merchantIdentifierOf(extension.value) : undefined;
  if (!merchantIdentifier)
    return refuse('certificate has no Apple Pay merchant identifier field (OID 1.2.840.113635.100.6.32)');
  if (certificate.notAfter <= now) refuse('certificate has expired');
  return { merchantIdentifier, notAfter: certificate.notAfter, pem: certificate.toString('pem') };
}
