import { DomainErrorKind, DomainException } from '../../common/errors/domain.exception';

/** Why the proxy refuses a request; the values are the problems' `code` on the wire. */
export enum ProxiesErrorCode {
  /** No such proxy for the tenant, or no proxy with the key a request names. */
  NotFound = 'not_found',
  /** The destination is refused by the outbound policy. */
  DestinationNotAllowed = 'destination_not_allowed',
  /** A header, expression or URL of the request is unusable. */
  Invalid = 'invalid_proxy_request',
  /** Once detokenized, the body, a header value or the query string would be over its limit. */
  RequestTooLarge = 'request_too_large',
  /** A pre-configured proxy with `require_auth` and no valid key. */
  Unauthenticated = 'unauthorized',
  /** The key may not use the proxy (wrong kind, unauthorized session). */
  Forbidden = 'forbidden',
  /** The destination could not be reached, or its answer is over the size cap. */
  Unreachable = 'destination_unreachable',
  ResponseTooLarge = 'response_too_large',
  /** The destination did not answer within PROXY_TIMEOUT_MS. */
  Timeout = 'destination_timeout',
}

const KIND: Record<ProxiesErrorCode, DomainErrorKind> = {
  [ProxiesErrorCode.NotFound]: 'not_found',
  [ProxiesErrorCode.DestinationNotAllowed]: 'invalid',
  [ProxiesErrorCode.Invalid]: 'invalid',
  [ProxiesErrorCode.RequestTooLarge]: 'invalid',
  [ProxiesErrorCode.Unauthenticated]: 'unauthenticated',
  [ProxiesErrorCode.Forbidden]: 'forbidden',
  [ProxiesErrorCode.Unreachable]: 'bad_gateway',
  [ProxiesErrorCode.ResponseTooLarge]: 'bad_gateway',
  [ProxiesErrorCode.Timeout]: 'gateway_timeout',
};

export class ProxiesException extends DomainException<ProxiesErrorCode> {
  readonly kind = KIND[this.code];

  static notFound(): ProxiesException {
    return new ProxiesException(ProxiesErrorCode.NotFound, 'Proxy not found');
  }
}
