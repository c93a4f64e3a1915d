import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why the wallets API refuses a request (besides a refused payload, WalletError); the problems' `code`. */
export enum WalletsErrorCode {
  /** No such merchant key of the tenant's (or another tenant's: never told apart). */
  NotFound = 'not_found',
  /** The tenant's wallet has 5 active keys already. */
  TooManyKeys = 'too_many_keys',
  /** The payload's transaction id was made into a token of the tenant's already. */
  Replayed = 'wallet_replayed',
  /** Google Pay payloads need GOOGLE_PAY_ROOT_KEYS, which this server does not have. */
  GooglePayNotConfigured = 'google_pay_not_configured',
}

const KIND: Record<WalletsErrorCode, DomainErrorKind> = {
  [WalletsErrorCode.NotFound]: 'not_found',
  [WalletsErrorCode.TooManyKeys]: 'conflict',
  [WalletsErrorCode.Replayed]: 'conflict',
  [WalletsErrorCode.GooglePayNotConfigured]: 'unavailable',
};

export class WalletsException extends DomainException<WalletsErrorCode> {
  readonly kind = KIND[this.code];

  static notFound(): WalletsException {
    return new WalletsException(WalletsErrorCode.NotFound, 'Merchant key not found');
  }

  static tooManyKeys(max: number): WalletsException {
    return new WalletsException(
      WalletsErrorCode.TooManyKeys,
      `A tenant has at most ${max} active keys per wallet: delete one first.`,
    );
  }

  static replayed(): WalletsException {
    return new WalletsException(
      WalletsErrorCode.Replayed,
      'This wallet payload (its transaction id) was already made into a token.',
    );
  }

  static googlePayNotConfigured(): WalletsException {
    return new WalletsException(
      WalletsErrorCode.GooglePayNotConfigured,
      "Google Pay payloads need Google's root signing keys: set GOOGLE_PAY_ROOT_KEYS (docs/wallets.md).",
    );
  }
}
