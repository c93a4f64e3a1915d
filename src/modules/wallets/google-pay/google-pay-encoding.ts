import { createPublicKey, KeyObject } from 'node:crypto';

/**
 * The byte-level pieces of Google Pay's `ECv2` format shared by the root-key loader and the decryptor:
 * strict base64, EC P-256 keys in the two encodings Google uses, and the length-prefixed signed strings.
 */

/** Standard base64 (`+` and `/`), padded or not; Google's payloads carry it padded. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The bytes of a base64 string, or null when it is not one: Buffer.from alone skips stray characters,
 * and a payload that is not what it claims must be refused rather than half read.
 */
export function decodeBase64(value: unknown): Buffer | null {
  if (typeof value !== 'string' || value.length === 0 || !BASE64.test(value)) return null;
  const padded = value.endsWith('=');
  if (padded ? value.length % 4 !== 0 : value.length % 4 === 1) return null;
  const bytes = Buffer.from(value, 'base64');
  // A last character whose unused bits are set decodes, yet is not what an encoder writes.
  if (bytes.toString('base64').replace(/=+$/, '') !== value.replace(/=+$/, '')) return null;
  return bytes;
}

/** The public key of a base64 SubjectPublicKeyInfo (DER) holding an EC P-256 key, or null. */
export function p256PublicKeyFromSpki(value: unknown): KeyObject | null {
  const der = decodeBase64(value);
  if (!der) return null;
  try {
    const key = createPublicKey({ key: der, format: 'der', type: 'spki' });
    return isP256(key) ? key : null;
  } catch {
    return null;
  }
}

/**
 * The public key of an uncompressed P-256 point (0x04 || X || Y, 65 bytes), or null when it is not one
 * or not on the curve (OpenSSL checks the point when the key is imported).
 */
export function p256PublicKeyFromPoint(point: Buffer): KeyObject | null {
  if (point.length !== 65 || point[0] !== 0x04) return null;
  try {
    const key = createPublicKey({
      key: {
        kty: 'EC',
        crv: 'P-256',
        x: point.subarray(1, 33).toString('base64url'),
        y: point.subarray(33, 65).toString('base64url'),
      },
      format: 'jwk',
    });
    return isP256(key) ? key : null;
  } catch {
    return null;
  }
}

export function isP256(key: KeyObject): boolean {
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
}

/**
 * Google's signed string: each part as a 4-byte little-endian length of its UTF-8 bytes, then the
 * bytes (the intermediate key: "Google", "ECv2", signedKey; the message: "Google", the recipient id,
 * "ECv2", signedMessage).
 */
export function signedString(...parts: string[]): Buffer {
  return Buffer.concat(
    parts.flatMap((part) => {
      const bytes = Buffer.from(part, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32LE(bytes.length);
      return [length, bytes];
    }),
  );
}

/** A time given as milliseconds since the epoch in a string of digits (Google's `keyExpiration`...). */
export function millisecondsDate(value: unknown): Date | null {
  if (typeof value !== 'string' || !/^\d{1,16}$/.test(value)) return null;
  const date = new Date(Number(value));
  return Number.isNaN(date.getTime()) ? null : date;
}

/** A JSON object parsed from text, or null when the text is not one. */
export function parseJsonObject(text: string): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  return isObject(value) ? value : null;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
