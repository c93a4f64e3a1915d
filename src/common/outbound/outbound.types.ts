/**
 * The one way the service sends HTTP to a destination a tenant chose (the proxy now, webhooks next).
 * The outbound policy: only http and https; a destination whose address is loopback,
 * private, link-local, unique-local, multicast or unspecified (or otherwise not public unicast) is
 * refused, checked on the address actually connected so that DNS rebinding and numeric host forms
 * cannot bypass it, unless its host or address is listed in OUTBOUND_ALLOWED_HOSTS.
 */

/** Why an outbound request did not produce a destination answer. */
export type OutboundFailure =
  /** Not an absolute http(s) URL, or it carries credentials (`user:pass@`). */
  | 'invalid_url'
  /** A method or header value HTTP cannot carry (a CR or LF in a value, say); nothing was sent. */
  | 'invalid_request'
  /** The address (or every address the name resolves to) is refused by the policy. */
  | 'destination_not_allowed'
  /** DNS failure, connection refused or reset, TLS failure. */
  | 'unreachable'
  /** No complete answer within the time-out. */
  | 'timeout'
  /** The answer's body is larger than the cap. */
  | 'response_too_large';

export class OutboundError extends Error {
  constructor(
    readonly failure: OutboundFailure,
    /** Safe to show a caller: names no address the policy refused, no body, no path or query. */
    message: string,
  ) {
    super(message);
  }
}

export interface OutboundRequest {
  /** Absolute http(s) URL (path and query included). */
  url: string;
  method: string;
  /** Sent as given, except hop-by-hop headers, `host` and `content-length` (computed from body). */
  headers: Record<string, string | string[]>;
  body?: Buffer;
  /** Default: the component's configured time-out (PROXY_TIMEOUT_MS). Covers connect to last byte. */
  timeoutMs?: number;
  /** Default 10 MiB; a larger answer is an OutboundError('response_too_large'). */
  maxResponseBytes?: number;
}

export interface OutboundResponse {
  status: number;
  /** The destination's headers, hop-by-hop headers removed; multi-valued headers as arrays. */
  headers: Record<string, string | string[]>;
  body: Buffer;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

/** Headers that belong to one connection, never forwarded in either direction (RFC 9110 7.6.1). */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
