import { createDecipheriv, createHmac, diffieHellman, hkdfSync, timingSafeEqual, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { WalletError } from '../wallet-error';
import {
  decodeBase64,
  isObject,
  millisecondsDate,
  p256PublicKeyFromPoint,
  p256PublicKeyFromSpki,
  parseJsonObject,
  signedString,
} from './google-pay-encoding';
import type { GooglePayRootKey } from './google-pay-root-keys';
import { parseGooglePayMessage } from './google-pay-message';
import type { GooglePayMessage } from './google-pay-message';

export { loadGooglePayRootKeys, parseGooglePayRootKeys } from './google-pay-root-keys';
export type { GooglePayRootKey } from './google-pay-root-keys';
export type { GooglePayMessage, GooglePayPaymentMethodDetails } from './google-pay-message';

/**
 * Google Pay `ECv2` payment method tokens (the `tokenizationData.token` string of a `PaymentData`),
 * verified and decrypted as Google's "Payment data cryptography for merchants" describes:
 *
 * 1. the intermediate signing key (`intermediateSigningKey.signedKey`) is signed by one of the root
 *    keys (protocol `ECv2`, not expired) over lp("Google") || lp("ECv2") || lp(signedKey);
 * 2. the intermediate key has not expired;
 * 3. the intermediate key signs lp("Google") || lp(recipientId) || lp("ECv2") || lp(signedMessage),
 *    the recipient id being `gateway:<gateway_merchant_id>` for a gateway such as this vault;
 * 4. `signedMessage` is opened: ECDH of the recipient's private key with `ephemeralPublicKey`,
 *    HKDF-SHA256 (salt 32 zero bytes, info "Google", input ephemeralPublicKey || shared secret) into
 *    64 bytes, an AES-256-CTR key (zero IV) then an HMAC-SHA256 key; the tag (HMAC of the ciphertext)
 *    is compared in constant time before anything is decrypted;
 * 5. `messageExpiration` is in the future.
 *
 * lp(x) is x's UTF-8 bytes after their length in 4 bytes, little-endian. Signatures are ECDSA P-256
 * with SHA-256, DER, base64.
 *
 * Every refusal is a WalletError with one of four codes and a fixed message: nothing of the payload is
 * ever put in an error.
 *
 * - `wallet_signature_invalid`: no live root key signed the intermediate key, or the message signature
 *   verifies for none of the recipients' ids (a payload for another merchant, or changed after signing;
 *   a signature that is not base64 DER is one that does not verify);
 * - `wallet_expired`: the intermediate key or the message has expired (checked in that order, each once
 *   what comes before it verified);
 * - `wallet_key_unknown`: no recipient at all, or the message was signed for a recipient none of whose
 *   keys Google encrypted to (see `open`);
 * - `wallet_payload_invalid`: anything malformed (not JSON of Google's shape, protocolVersion not
 *   `ECv2`, a signed part Google would not write), a tag that fails under the key Google used, or a
 *   decrypted message that is not a well-formed `CARD` message.
 */

/** A merchant key that may open a payload: its private key and the recipient id Google signs for. */
export interface GooglePayRecipient {
  /** `gateway:<gateway_merchant_id>` (any recipient id Google signs for, such as `merchant:<id>`). */
  recipientId: string;
  privateKey: KeyObject;
  /** The caller's name for the key, given back in the message it opens. */
  keyId: string;
}

export interface GooglePayDecryptOptions {
  rootKeys: GooglePayRootKey[];
  /** The tenant's active keys; several may share a recipient id (rotation). */
  recipients: GooglePayRecipient[];
  now: Date;
}

const SENDER_ID = 'Google';
const PROTOCOL_VERSION = 'ECv2';
const HKDF_SALT = Buffer.alloc(32);
const HKDF_INFO = Buffer.from(SENDER_ID, 'utf8');
const ZERO_IV = Buffer.alloc(16);

interface Envelope {
  signature: string;
  signedKey: string;
  keySignatures: unknown[];
  signedMessage: string;
}

interface Sealed {
  ephemeralPoint: Buffer;
  ephemeralKey: KeyObject;
  ciphertext: Buffer;
  tag: Buffer;
}

/** Verifies and decrypts an `ECv2` token for one of `recipients`; a WalletError when it cannot. */
export function decryptGooglePayEcv2(token: string, options: GooglePayDecryptOptions): GooglePayMessage {
  const { now } = options;
  const envelope = parseEnvelope(token);
  const intermediateKey = verifyIntermediateKey(envelope, options.rootKeys, now);
  // A tenant with no Google Pay key holds nothing that could open any payload: that is what the
  // payload lacks, whatever it was signed for.
  if (options.recipients.length === 0) throw new WalletError('wallet_key_unknown');
  const recipientId = verifyMessageSignature(envelope, intermediateKey, options.recipients);
  const sealed = parseSealed(envelope.signedMessage);
  const candidates = options.recipients.filter((recipient) => recipient.recipientId === recipientId);
  const { keyId, plaintext } = open(sealed, candidates);
  return { keyId, ...parseGooglePayMessage(plaintext, now) };
}

/** The token's outer JSON; anything missing or of the wrong type is malformed. */
function parseEnvelope(token: string): Envelope {
  const malformed = () => new WalletError('wallet_payload_invalid');
  const outer = typeof token === 'string' ? parseJsonObject(token) : null;
  if (!outer) throw malformed();
  const { protocolVersion, signature, intermediateSigningKey, signedMessage } = outer;
  if (protocolVersion !== PROTOCOL_VERSION) throw malformed();
  if (typeof signature !== 'string' || typeof signedMessage !== 'string') throw malformed();
  if (!isObject(intermediateSigningKey)) throw malformed();
  const { signedKey, signatures } = intermediateSigningKey;
  if (typeof signedKey !== 'string' || !Array.isArray(signatures) || signatures.length === 0)
    throw malformed();
  return { signature, signedKey, keySignatures: signatures, signedMessage };
}

/** ECDSA P-256 SHA-256 over `data`; a signature that is not base64 DER verifies nothing. */
function verifies(publicKey: KeyObject, data: Buffer, signature: unknown): boolean {
  const der = decodeBase64(signature);
  if (!der) return false;
  try {
    return verify('sha256', data, { key: publicKey, dsaEncoding: 'der' }, der);
  } catch {
    return false;
  }
}

/** Steps 1 and 2: the intermediate signing key, signed by a live root key and itself unexpired. */
function verifyIntermediateKey(envelope: Envelope, rootKeys: GooglePayRootKey[], now: Date): KeyObject {
  const live = rootKeys.filter(
    (root) => root.protocolVersion === PROTOCOL_VERSION && root.keyExpiration.getTime() > now.getTime(),
  );
  const signed = signedString(SENDER_ID, PROTOCOL_VERSION, envelope.signedKey);
  const chained = envelope.keySignatures.some((signature) =>
    live.some((root) => verifies(root.publicKey, signed, signature)),
  );
  if (!chained) throw new WalletError('wallet_signature_invalid');
  // Signed by Google, yet not what Google writes: malformed.
  const signedKey = parseJsonObject(envelope.signedKey);
  const publicKey = signedKey ? p256PublicKeyFromSpki(signedKey.keyValue) : null;
  const expiration = signedKey ? millisecondsDate(signedKey.keyExpiration) : null;
  if (!publicKey || !expiration) throw new WalletError('wallet_payload_invalid');
  if (expiration.getTime() <= now.getTime()) throw new WalletError('wallet_expired');
  return publicKey;
}

/**
 * Step 3: the recipient id the message was signed for, among the recipients' ids. A payload signed for
 * another merchant verifies for none of them: a recipient that does not verify.
 */
function verifyMessageSignature(
  envelope: Envelope,
  intermediateKey: KeyObject,
  recipients: GooglePayRecipient[],
) {
  for (const recipientId of new Set(recipients.map((recipient) => recipient.recipientId))) {
    const signed = signedString(SENDER_ID, recipientId, PROTOCOL_VERSION, envelope.signedMessage);
    if (verifies(intermediateKey, signed, envelope.signature)) return recipientId;
  }
  throw new WalletError('wallet_signature_invalid');
}

/** `signedMessage`: `{encryptedMessage, ephemeralPublicKey, tag}`, each base64. */
function parseSealed(signedMessage: string): Sealed {
  const message = parseJsonObject(signedMessage);
  const ciphertext = message ? decodeBase64(message.encryptedMessage) : null;
  const ephemeralPoint = message ? decodeBase64(message.ephemeralPublicKey) : null;
  const tag = message ? decodeBase64(message.tag) : null;
  const ephemeralKey = ephemeralPoint ? p256PublicKeyFromPoint(ephemeralPoint) : null;
  if (!ciphertext || !ephemeralPoint || !ephemeralKey || !tag || tag.length !== 32)
    throw new WalletError('wallet_payload_invalid');
  return { ephemeralPoint, ephemeralKey, ciphertext, tag };
}

/** The AES-256-CTR key and HMAC-SHA256 key a recipient's private key derives for this payload. */
function deriveKeys(sealed: Sealed, privateKey: KeyObject): { encryptionKey: Buffer; macKey: Buffer } {
  const sharedSecret = diffieHellman({ privateKey, publicKey: sealed.ephemeralKey });
  const derived = Buffer.from(
    hkdfSync('sha256', Buffer.concat([sealed.ephemeralPoint, sharedSecret]), HKDF_SALT, HKDF_INFO, 64),
  );
  sharedSecret.fill(0);
  return { encryptionKey: derived.subarray(0, 32), macKey: derived.subarray(32, 64) };
}

function wipe(keys: { encryptionKey: Buffer; macKey: Buffer }): void {
  keys.encryptionKey.fill(0);
  keys.macKey.fill(0);
}

/**
 * Step 4, for the keys of the recipient the message was signed for: the first whose tag verifies
 * decrypts it.
 *
 * When no key's tag verifies, which code? The tag alone cannot tell a key we do not hold (Google
 * encrypted to a deleted key, or to another party's) from a ciphertext or tag that was changed: both
 * are an HMAC that does not match. The contract wants the first to be `wallet_key_unknown` and the
 * second `wallet_payload_invalid`. What tells them apart is whether the key is the one Google used,
 * and only the key stream shows that: Google's plaintext is a JSON object, so under the right key the
 * first bytes of the ciphertext decrypt to `{` and printable text, and under any other key to noise
 * (16 printable bytes starting with `{` by chance: a few in 10^9). So, once every tag has failed,
 * each key decrypts at most the first 16 bytes, only to be tested for that shape and then wiped; nothing
 * is parsed or returned, and nothing is decrypted before its tag verified otherwise. This is no oracle:
 * the signature (step 3) covers the whole signedMessage, so only a payload Google itself signed gets
 * here. A changed ciphertext whose first bytes were the ones changed reads as an unknown key; Google
 * never sends one (it would not have verified).
 */
function open(sealed: Sealed, candidates: GooglePayRecipient[]): { keyId: string; plaintext: Buffer } {
  for (const candidate of candidates) {
    const keys = deriveKeys(sealed, candidate.privateKey);
    const mac = createHmac('sha256', keys.macKey).update(sealed.ciphertext).digest();
    if (timingSafeEqual(mac, sealed.tag)) {
      const decipher = createDecipheriv('aes-256-ctr', keys.encryptionKey, ZERO_IV);
      const plaintext = Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
      wipe(keys);
      return { keyId: candidate.keyId, plaintext };
    }
    wipe(keys);
  }
  const heldKeyFailed = candidates.some((candidate) => startsAsJsonObject(sealed, candidate.privateKey));
  throw new WalletError(heldKeyFailed ? 'wallet_payload_invalid' : 'wallet_key_unknown');
}

/** JSON's whitespace, before the `{` of the object. */
const JSON_SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** Whether the first bytes of the ciphertext, under this key, read as the start of a JSON object. */
function startsAsJsonObject(sealed: Sealed, privateKey: KeyObject): boolean {
  const keys = deriveKeys(sealed, privateKey);
  const decipher = createDecipheriv('aes-256-ctr', keys.encryptionKey, ZERO_IV);
  const head = decipher.update(sealed.ciphertext.subarray(0, 16));
  wipe(keys);
  const start = head.findIndex((byte) => !JSON_SPACE.has(byte));
  const shaped =
    start >= 0 &&
    head[start] === 0x7b &&
    head.every((byte) => JSON_SPACE.has(byte) || (byte >= 0x20 && byte <= 0x7e));
  head.fill(0);
  return shaped;
}
