import { DomainException } from '../../common/errors/domain.exception';

/**
 * Why a wallet payload (Apple Pay `EC_v1`, Google Pay `ECv2`) is refused; the values are the
 * problems' `code` on the wire (docs/wallets.md lists them).
 */
export type WalletErrorCode =
  /** A signature, certificate chain, certificate OID or recipient that does not verify. */
  | 'wallet_signature_invalid'
  /** An expired intermediate key, a signing time over 5 minutes old or an expired message. */
  | 'wallet_expired'
  /** No active merchant key of the tenant matches the payload. */
  | 'wallet_key_unknown'
  /** Anything malformed, or a ciphertext or tag that fails once the signature verified. */
  | 'wallet_payload_invalid';

/**
 * One fixed sentence per code: a refusal never carries anything drawn from the payload (not a field,
 * not a certificate subject, not a parser's message), so a problem can be logged and shown as is.
 */
const MESSAGE: Record<WalletErrorCode, string> = {
  wallet_signature_invalid: 'The wallet payload signature does not verify',
  wallet_expired: 'The wallet payload or its signing key has expired',
  wallet_key_unknown: 'No active merchant key of this tenant matches the wallet payload',
  wallet_payload_invalid: 'The wallet payload is malformed or does not decrypt',
};

/** A refused wallet payload: a 400 problem whose `code` is one of WalletErrorCode. */
export class WalletError extends DomainException<WalletErrorCode> {
  readonly kind = 'invalid';

  constructor(code: WalletErrorCode) {
    super(code, MESSAGE[code]);
  }
}
