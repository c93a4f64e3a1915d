import {
  createECDH,
  createHmac,
  createCipheriv,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A stand-in for Google's side of Google Pay `ECv2` (Google's "Payment data cryptography for
 * merchants"), written apart from the service's decryptor and importing none of it, so that a test that
 * passes shows two implementations agree: its own root signing keys (written as a file in the format of
 * Google's published keys, for GOOGLE_PAY_ROOT_KEYS) and intermediate signing key, and tokens encrypted
 * to a merchant's public key (base64 uncompressed point, as `POST /wallets/google-pay/merchant-keys`
 * answers `public_key`) for a gateway merchant id, each failure on demand.
 */

/** What a token gets wrong on purpose, and the code the vault must answer. */
export type GooglePayFault =
  /** The intermediate key is signed by a root key that is not in the file: wallet_signature_invalid. */
  | 'wrong_root'
  /** The intermediate key's signature is damaged: wallet_signature_invalid. */
  | 'bad_intermediate_signature'
  /** The intermediate key expired (validly signed): wallet_expired. */
  | 'expired_intermediate'
  /** The message expired (validly signed and encrypted): wallet_expired. */
  | 'expired_message'
  /** The message signature is damaged: wallet_signature_invalid. */
  | 'bad_signature'
  /** Signed for `gateway:<gatewayMerchantId>-other`, another merchant: wallet_signature_invalid. */
  | 'other_recipient'
  /** Signed for the right recipient, its last ciphertext byte changed after the tag: wallet_payload_invalid. */
  | 'tampered_ciphertext'
  /** Signed for the right recipient, its tag changed: wallet_payload_invalid. */
  | 'tampered_tag'
  /** Encrypted to a fresh key instead of `recipientPublicKey` (validly signed): wallet_key_unknown. */
  | 'unknown_key'
  /** The plaintext is not JSON (validly tagged and signed): wallet_payload_invalid. */
  | 'plaintext_not_json'
  /** `protocolVersion` `ECv1`: wallet_payload_invalid. */
  | 'wrong_protocol_version';

export interface GooglePayTokenOptions {
  /** The merchant's public key: base64 of the uncompressed P-256 point (65 bytes, 0x04 first). */
  recipientPublicKey: string;
  /** Signed as the recipient id `gateway:<gatewayMerchantId>`. */
  gatewayMerchantId: string;
  /** Default CRYPTOGRAM_3DS. */
  authMethod?: 'PAN_ONLY' | 'CRYPTOGRAM_3DS';
  /** Default 4111111111111111 (the DPAN of a CRYPTOGRAM_3DS token). */
  pan?: string;
  expirationMonth?: number;
  expirationYear?: number;
  /** CRYPTOGRAM_3DS only; default a random 20-byte base64 cryptogram. */
  cryptogram?: string;
  /** CRYPTOGRAM_3DS only; default "05", null to leave it out (Google does not always send one). */
  eciIndicator?: string | null;
  /** Default a fresh random id (a replay reuses one). */
  messageId?: string;
  /** The time the token is made at; default now. */
  now?: Date;
  /** Default an hour after `now` ('expired_message': a minute before). */
  messageExpiration?: Date;
  /** Default a day after `now` ('expired_intermediate': a minute before). */
  intermediateExpiration?: Date;
  fault?: GooglePayFault;
  /** The plaintext to encrypt instead of the message the options describe (a malformed one, say). */
  plaintext?: string;
  /** Signatures of the intermediate key put before the real one (Google may list several). */
  extraKeySignatures?: string[];
}

const SENDER = 'Google';
const VERSION = 'ECv2';
const MINUTE = 60_000;

/** Google's signed string: every part preceded by its byte length as a little-endian 32-bit number. */
function toSign(parts: string[]): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const bytes = Buffer.from(part, 'utf8');
    const size = Buffer.alloc(4);
    size.writeUInt32LE(bytes.length, 0);
    chunks.push(size, bytes);
  }
  return Buffer.concat(chunks);
}

/** HKDF-SHA256 (RFC 5869) written out: extract with the salt, then expand with the info. */
function hkdf(ikm: Buffer, salt: Buffer, info: Buffer, length: number): Buffer {
  const prk = createHmac('sha256', salt).update(ikm).digest();
  const blocks: Buffer[] = [];
  let previous = Buffer.alloc(0);
  for (let counter = 1; Buffer.concat(blocks).length < length; counter++) {
    previous = createHmac('sha256', prk)
      .update(Buffer.concat([previous, info, Buffer.from([counter])]))
      .digest();
    blocks.push(previous);
  }
  return Buffer.concat(blocks).subarray(0, length);
}

function ecdsa(privateKey: KeyObject, data: Buffer): string {
  return sign('sha256', data, privateKey).toString('base64');
}

function damage(base64: string): string {
  const bytes = Buffer.from(base64, 'base64');
  bytes[bytes.length - 1] ^= 0x01;
  return bytes.toString('base64');
}

function newP256(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

function spkiBase64(key: KeyObject): string {
  return key.export({ format: 'der', type: 'spki' }).toString('base64');
}

/**
 * A merchant key pair as the vault makes one: the private key, and the public key as the base64 of its
 * uncompressed point (for a unit test that plays the vault's part).
 */
export function newGooglePayRecipientKey(): { privateKey: KeyObject; publicKey: string } {
  const ecdh = createECDH('prime256v1');
  const publicKey = ecdh.generateKeys();
  const privateKey = createPrivateKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      d: ecdh.getPrivateKey().toString('base64url'),
      x: publicKey.subarray(1, 33).toString('base64url'),
      y: publicKey.subarray(33, 65).toString('base64url'),
    },
    format: 'jwk',
  });
  return { privateKey, publicKey: publicKey.toString('base64') };
}

export class GooglePayTestSender {
  /** The root signing key the root keys file lists (ECv2). */
  private readonly root = newP256();
  /** A root key that signs (for 'wrong_root') but is in no file. */
  private readonly strangerRoot = newP256();
  /** The intermediate signing key, signed by the root for each token with that token's expiration. */
  private readonly intermediate = newP256();

  /**
   * @param rootExpiration when the root key of the file expires (default a year from now)
   */
  constructor(private readonly rootExpiration = new Date(Date.now() + 365 * 24 * 60 * MINUTE)) {}

  /**
   * The root keys file's text, shaped as Google's published keys, with an `ECv1` key (no expiration, as
   * Google lists it) beside the `ECv2` one.
   */
  rootKeysJson(): string {
    return JSON.stringify(
      {
        keys: [
          { keyValue: spkiBase64(newP256().publicKey), protocolVersion: 'ECv1' },
          {
            keyValue: spkiBase64(this.root.publicKey),
            protocolVersion: VERSION,
            keyExpiration: String(this.rootExpiration.getTime()),
          },
        ],
      },
      null,
      2,
    );
  }

  /** Writes the root keys file (in `dir`, default a new temporary directory) and answers its path. */
  writeRootKeysFile(dir = mkdtempSync(join(tmpdir(), 'google-pay-roots-'))): string {
    const path = join(dir, 'google-pay-root-keys.json');
    writeFileSync(path, this.rootKeysJson());
    return path;
  }

  /** A `tokenizationData.token` string, as Google Pay hands it to the merchant's page. */
  token(options: GooglePayTokenOptions): string {
    const fault = options.fault;
    const now = (options.now ?? new Date()).getTime();
    const intermediateExpiration =
      fault === 'expired_intermediate'
        ? now - MINUTE
        : (options.intermediateExpiration?.getTime() ?? now + 24 * 60 * MINUTE);
    const messageExpiration =
      fault === 'expired_message'
        ? now - MINUTE
        : (options.messageExpiration?.getTime() ?? now + 60 * MINUTE);

    const signedKey = JSON.stringify({
      keyValue: spkiBase64(this.intermediate.publicKey),
      keyExpiration: String(intermediateExpiration),
    });
    const rootKey = fault === 'wrong_root' ? this.strangerRoot.privateKey : this.root.privateKey;
    let keySignature = ecdsa(rootKey, toSign([SENDER, VERSION, signedKey]));
    if (fault === 'bad_intermediate_signature') keySignature = damage(keySignature);

    const plaintext =
      options.plaintext ??
      (fault === 'plaintext_not_json'
        ? 'not a message'
        : JSON.stringify(this.message(options, messageExpiration)));
    const recipient =
      fault === 'unknown_key' ? newGooglePayRecipientKey().publicKey : options.recipientPublicKey;
    const sealed = this.seal(Buffer.from(plaintext, 'utf8'), recipient);
    if (fault === 'tampered_ciphertext') sealed.encryptedMessage = damage(sealed.encryptedMessage);
    if (fault === 'tampered_tag') sealed.tag = damage(sealed.tag);
    const signedMessage = JSON.stringify(sealed);

    const gatewayMerchantId =
      fault === 'other_recipient' ? `${options.gatewayMerchantId}-other` : options.gatewayMerchantId;
    let signature = ecdsa(
      this.intermediate.privateKey,
      toSign([SENDER, `gateway:${gatewayMerchantId}`, VERSION, signedMessage]),
    );
    if (fault === 'bad_signature') signature = damage(signature);

    return JSON.stringify({
      signature,
      intermediateSigningKey: {
        signedKey,
        signatures: [...(options.extraKeySignatures ?? []), keySignature],
      },
      protocolVersion: fault === 'wrong_protocol_version' ? 'ECv1' : VERSION,
      signedMessage,
    });
  }

  /** The decrypted message Google would send (with `gatewayMerchantId`, as Google adds it for gateways). */
  private message(options: GooglePayTokenOptions, messageExpiration: number): Record<string, unknown> {
    const authMethod = options.authMethod ?? 'CRYPTOGRAM_3DS';
    const details: Record<string, unknown> = {
      expirationYear: options.expirationYear ?? 2030,
      expirationMonth: options.expirationMonth ?? 12,
      pan: options.pan ?? '4111111111111111',
      authMethod,
    };
    if (authMethod === 'CRYPTOGRAM_3DS') {
      details.cryptogram = options.cryptogram ?? randomBytes(20).toString('base64');
      const eci = options.eciIndicator === undefined ? '05' : options.eciIndicator;
      if (eci !== null) details.eciIndicator = eci;
    }
    return {
      gatewayMerchantId: options.gatewayMerchantId,
      messageExpiration: String(messageExpiration),
      messageId: options.messageId ?? `AH2Ej${randomBytes(48).toString('base64url')}`,
      paymentMethod: 'CARD',
      paymentMethodDetails: details,
    };
  }

  /**
   * ECIES-KEM as Google does it: a fresh ephemeral key, ECDH with the recipient's point, HKDF-SHA256
   * (32 zero bytes of salt, info "Google", ephemeral point || shared secret) into an AES-256-CTR key
   * (zero IV) and an HMAC-SHA256 key; the tag is the HMAC of the ciphertext.
   */
  private seal(
    plaintext: Buffer,
    recipientPublicKey: string,
  ): Record<'encryptedMessage' | 'ephemeralPublicKey' | 'tag', string> {
    const ephemeral = createECDH('prime256v1');
    const ephemeralPoint = ephemeral.generateKeys();
    const shared = ephemeral.computeSecret(Buffer.from(recipientPublicKey, 'base64'));
    const keys = hkdf(
      Buffer.concat([ephemeralPoint, shared]),
      Buffer.alloc(32),
      Buffer.from(SENDER, 'utf8'),
      64,
    );
    const cipher = createCipheriv('aes-256-ctr', keys.subarray(0, 32), Buffer.alloc(16));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const tag = createHmac('sha256', keys.subarray(32)).update(ciphertext).digest();
    return {
      encryptedMessage: ciphertext.toString('base64'),
      ephemeralPublicKey: ephemeralPoint.toString('base64'),
      tag: tag.toString('base64'),
    };
  }
}
