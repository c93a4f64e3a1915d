import basex from 'base-x';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const BASE62 = basex('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz');

export const KEY_KINDS = { public: 'pub', private: 'pvt', management: 'mgt', session: 'ses' } as const;
export type KeyKind = keyof typeof KEY_KINDS;

const PREFIX_TO_KIND = new Map<string, KeyKind>(
  Object.entries(KEY_KINDS).map(([kind, prefix]) => [prefix, kind as KeyKind]),
);
const KEY_FORMAT = /^key_(pub|pvt|mgt|ses)_([0-9A-Za-z]{40,50})$/;

/** `key_<kind>_<32 random bytes in base62>`; the clear key is returned once and never stored. */
export function generateApiKey(kind: KeyKind): string {
  return `key_${KEY_KINDS[kind]}_${BASE62.encode(randomBytes(32))}`;
}

/** The kind a well-formed key claims, or undefined for anything that is not a key of this service. */
export function keyKindOf(key: string): KeyKind | undefined {
  const match = KEY_FORMAT.exec(key);
  return match ? PREFIX_TO_KIND.get(match[1]) : undefined;
}

/** SHA-256 of a high-entropy key: enough to make the stored digest useless to an attacker. */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

export function sameDigest(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
