import { readFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { ConfigError } from '../../../config/load-config';
import { isObject, millisecondsDate, p256PublicKeyFromSpki } from './google-pay-encoding';

/** The setting that names the file; every refusal of the file names it. */
const SETTING = 'GOOGLE_PAY_ROOT_KEYS';

/**
 * A Google root signing key for `ECv2`: the key that signs Google's intermediate signing keys, usable
 * until `keyExpiration`.
 */
export interface GooglePayRootKey {
  protocolVersion: 'ECv2';
  publicKey: KeyObject;
  keyExpiration: Date;
}

/**
 * The `ECv2` root signing keys of a file in the format of Google's published keys:
 *
 *     {"keys": [{"keyValue": "<base64 SPKI DER, EC P-256>", "protocolVersion": "ECv2",
 *                "keyExpiration": "<ms since the epoch>"}, ...]}
 *
 * Google's file also lists keys of other protocol versions (`ECv1` without an expiration,
 * `ECv2SigningOnly`): they are skipped, as they sign nothing this service accepts. An `ECv2` key
 * without `keyExpiration` is refused (the protocol requires one). Expiry is not judged here: an
 * expired key is kept and simply verifies nothing (decryptGooglePayEcv2 is given the time).
 *
 * A file that cannot be used is a ConfigError naming the setting, the file and what is wrong, never
 * anything of its content.
 */
export function loadGooglePayRootKeys(path: string): GooglePayRootKey[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new ConfigError(`${SETTING}: ${path} cannot be read`);
  }
  return parseGooglePayRootKeys(text, path);
}

/** The keys of the file's text (loadGooglePayRootKeys); `source` names the file in refusals. */
export function parseGooglePayRootKeys(text: string, source: string): GooglePayRootKey[] {
  const refuse = (what: string) =>
    new ConfigError(`${SETTING}: ${source} ${what} (the format of Google's published root signing keys)`);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw refuse('is not JSON');
  }
  if (!isObject(document) || !Array.isArray(document.keys))
    throw refuse('must be a JSON object with a "keys" array');
  const keys: GooglePayRootKey[] = [];
  document.keys.forEach((entry: unknown, index) => {
    const at = `keys[${index}]`;
    if (!isObject(entry) || typeof entry.protocolVersion !== 'string')
      throw refuse(`has an entry ${at} that is not an object with a "protocolVersion" string`);
    if (entry.protocolVersion !== 'ECv2') return;
    const publicKey = p256PublicKeyFromSpki(entry.keyValue);
    if (!publicKey)
      throw refuse(`has an ECv2 entry ${at} whose keyValue is not the base64 of an EC P-256 public key`);
    const keyExpiration = millisecondsDate(entry.keyExpiration);
    if (!keyExpiration)
      throw refuse(
        `has an ECv2 entry ${at} whose keyExpiration is not milliseconds since the epoch in a string`,
      );
    keys.push({ protocolVersion: 'ECv2', publicKey, keyExpiration });
  });
  if (keys.length === 0) throw refuse('holds no ECv2 key');
  return keys;
}
