import { createHmac } from 'node:crypto';
import { ProblemException } from '../errors/problem.exception';
import { open, seal } from './aead';

/** Who holds the key-encrypting keys (KEY_PROVIDER, docs/keys.md). */
export type KeyProviderName = 'env' | 'split' | 'pkcs11';

/**
 * One version of the key-encrypting key (KEK): what wraps and unwraps tenants' data keys and the audit
 * log's signing seeds. Under `env` and `split` the key is in this process's memory; under `pkcs11` it is
 * an object in the HSM that never leaves it, and every wrap and unwrap is a call into the device.
 * Wrapped values have one layout whoever wraps them: iv (12) || ciphertext || tag (16), AES-256-GCM with
 * the caller's additional data.
 */
export interface KeyEncryptionKey {
  readonly version: string;
  /** Wraps a data key (or seed) bound to `aad`. */
  wrap(plaintext: Buffer, aad: string): Buffer;
  /** Opens what `wrap` made; DecryptionError when it does not authenticate under this key and `aad`. */
  unwrap(wrapped: Buffer, aad: string): Buffer;
  /**
   * What the database records to tell this key from another of the same version, and that tells nothing
   * of the key: an HMAC for a key in memory, the device's key check value (KCV) for a key in an HSM.
   */
  checkValue(): Buffer;
}

/** A check value of a key in memory: shows whether a key is the one a version was first used with. */
export const checkValue = (key: Buffer): Buffer =>
  createHmac('sha256', key).update('vault:master-key-check:v1').digest();

/** A key-encrypting key held in this process's memory (`env`, and `split` once unsealed). */
export class MemoryKek implements KeyEncryptionKey {
  constructor(
    readonly version: string,
    private readonly key: Buffer,
  ) {}

  wrap(plaintext: Buffer, aad: string): Buffer {
    return seal(this.key, plaintext, aad);
  }

  unwrap(wrapped: Buffer, aad: string): Buffer {
    return open(this.key, wrapped, aad);
  }

  checkValue(): Buffer {
    return checkValue(this.key);
  }
}

/**
 * The HSM (KEY_PROVIDER=pkcs11) did not answer: its module failed, the token is gone, or the session was
 * lost. The request is not retried by the service (the caller may); the next use opens the device again.
 */
export class KeyProviderUnavailableError extends ProblemException {
  constructor() {
    super(
      503,
      'The key provider (the HSM holding the key-encrypting key) did not answer; try again shortly.',
      { code: 'key_provider_unavailable', headers: { 'Retry-After': '1' } },
    );
  }
}
