import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why the vault refuses a token request; the values are the problems' `code` on the wire. */
export enum TokensErrorCode {
  /** No such live token, or no rule of the caller covers it (the two are never told apart). */
  NotFound = 'not_found',
  /** A rule covers the token but does not grant what the request needs. */
  Forbidden = 'forbidden',
  /** A token id given by the caller is taken. */
  Conflict = 'conflict',
  /** The request's shape is wrong as a whole (not one field). */
  BadRequest = 'bad_request',
  TooManyTokens = 'too_many_tokens',
  EmptyTokenize = 'empty_tokenize',
}

const KIND: Record<TokensErrorCode, DomainErrorKind> = {
  [TokensErrorCode.NotFound]: 'not_found',
  [TokensErrorCode.Forbidden]: 'forbidden',
  [TokensErrorCode.Conflict]: 'conflict',
  [TokensErrorCode.BadRequest]: 'invalid',
  [TokensErrorCode.TooManyTokens]: 'invalid',
  [TokensErrorCode.EmptyTokenize]: 'invalid',
};

export class TokensException extends DomainException<TokensErrorCode> {
  readonly kind = KIND[this.code];

  static notFound(): TokensException {
    return new TokensException(TokensErrorCode.NotFound, 'Token not found');
  }

  static forbidden(detail: string): TokensException {
    return new TokensException(TokensErrorCode.Forbidden, detail);
  }

  static badRequest(detail: string): TokensException {
    return new TokensException(TokensErrorCode.BadRequest, detail);
  }
}
