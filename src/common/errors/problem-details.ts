import { HttpException, HttpStatus, NotFoundException } from '@nestjs/common';
import { STATUS_CODES } from 'node:http';
import { DomainErrorKind, DomainException } from './domain.exception';
import { FieldErrors, ProblemException } from './problem.exception';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** RFC 9457 problem details as this service sends them. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  code?: string;
  errors?: FieldErrors;
  trace_id?: string;
}

export interface RenderedProblem {
  body: ProblemDetails;
  headers: Record<string, string>;
  /** True when the failure is ours (a 5xx) and must be logged with its stack. */
  unexpected: boolean;
}

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
  message?: string;
}

function problem(status: number, detail: string, extra: Partial<ProblemDetails> = {}): ProblemDetails {
  return { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail, ...extra };
}

function messageOf(response: string | object, fallback: string): string {
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (typeof message === 'string') return message;
  if (Array.isArray(message)) return message.map(String).join('; ');
  return fallback;
}

/** The `code` of a client error that did not name one itself: every problem carries a code. */
const CODE_OF_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  411: 'length_required',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
};

/** The one mapping of domain errors onto HTTP. */
const STATUS_OF_KIND: Record<DomainErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unprocessable: 422,
  bad_gateway: 502,
  gateway_timeout: 504,
  unavailable: 503,
};

const isDomainException = (e: unknown): e is DomainException => e instanceof DomainException;

/** Maps anything thrown while serving a request to the problem the client sees. Never leaks internals. */
export function toProblem(exception: unknown, traceId?: string): RenderedProblem {
  if (isDomainException(exception)) {
    const refusal = exception;
    return {
      body: problem(STATUS_OF_KIND[refusal.kind], refusal.detail, {
        code: refusal.code,
        errors: refusal.errors,
      }),
      headers: refusal.headers ?? {},
      unexpected: false,
    };
  }
  if (exception instanceof ProblemException) {
    const { errors, code, headers } = exception.extras;
    return {
      body: problem(exception.getStatus(), exception.detail, { code, errors }),
      headers: headers ?? {},
      unexpected: exception.getStatus() >= 500,
    };
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status >= 500 && status !== Number(HttpStatus.SERVICE_UNAVAILABLE)) {
      return {
        body: problem(500, 'An unexpected error occurred.', { trace_id: traceId }),
        headers: {},
        unexpected: true,
      };
    }
    // The router's own 404 ("Cannot GET /path") would echo the path, which may hold anything.
    const unknownRoute = exception instanceof NotFoundException && /^Cannot /.test(exception.message);
    const detail = unknownRoute
      ? 'No route matches this method and path.'
      : messageOf(exception.getResponse(), exception.message);
    return {
      body: problem(status, detail, { code: CODE_OF_STATUS[status] }),
      headers: {},
      unexpected: false,
    };
  }
  // Errors raised by body-parser and other connect middleware carry an HTTP status of their own.
  const http = (exception ?? {}) as HttpLikeError;
  const status = http.status ?? http.statusCode;
  if (http.type === 'entity.parse.failed') {
    return {
      body: problem(400, 'The request body is not valid JSON.', { code: 'malformed_json' }),
      headers: {},
      unexpected: false,
    };
  }
  if (http.type === 'entity.too.large' || status === 413) {
    return {
      body: problem(413, 'The request body exceeds the 1 MiB limit.', { code: 'payload_too_large' }),
      headers: {},
      unexpected: false,
    };
  }
  if (databaseUnavailable(exception)) {
    return {
      body: problem(503, 'The database is unavailable; retry shortly.', {
        code: 'database_unavailable',
        trace_id: traceId,
      }),
      headers: { 'Retry-After': '1' },
      unexpected: true,
    };
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const detail = http.expose && http.message ? http.message : (STATUS_CODES[status] ?? 'Bad request');
    return {
      body: problem(status, detail, { code: CODE_OF_STATUS[status] }),
      headers: {},
      unexpected: false,
    };
  }
  return {
    body: problem(500, 'An unexpected error occurred.', { trace_id: traceId }),
    headers: {},
    unexpected: true,
  };
}

/**
 * SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown, terminated, cannot
 * connect now), and 25006 (read-only transaction: a node that is no longer the primary, during a failover).
 */
const UNAVAILABLE_CODES = /^(08|57P0[123]|25006)/;
const UNAVAILABLE_MESSAGES =
  /Connection terminated|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOENT.*\.s\.PGSQL|the database system is (starting up|shutting down)|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect|Connection is not established/;

const RELEASED_RUNNER = new Set([
  'QueryRunnerProviderAlreadyReleasedError',
  'QueryRunnerAlreadyReleasedError',
]);

/** True when an error means PostgreSQL cannot be reached now (a 503 that heals), not a bug (a 500). */
export function databaseUnavailable(exception: unknown): boolean {
  for (
    let e = exception as
        { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown } | undefined,
      depth = 0;
    e && depth < 4;
    depth++
  ) {
    if (typeof e.code === 'string' && UNAVAILABLE_CODES.test(e.code)) return true;
    // TypeORM's answers to a statement (or the COMMIT) of a transaction whose connection broke, and was
    // released, under it: nothing of it committed.
    if (RELEASED_RUNNER.has(String((e as { name?: unknown }).name))) return true;
    if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) return true;
    e = (e.driverError ?? e.cause) as typeof e;
  }
  return false;
}
