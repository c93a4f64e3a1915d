import type { FieldErrors } from './problem.exception';

/**
 * What kind of refusal a domain error is, independent of HTTP. The problem-details filter is the one
 * place that turns a kind into a status (`STATUS_OF_KIND` in problem-details.ts).
 */
export type DomainErrorKind =
  | 'invalid'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'unprocessable'
  /** A destination the service called for the client failed or answered unusably (the proxy). */
  | 'bad_gateway'
  /** A destination the service called for the client did not answer in time. */
  | 'gateway_timeout'
  /** What the request needs is missing on this server (the card elements not built). */
  | 'unavailable';

/**
 * The base of every module's own exceptions. A module declares its codes as an enum and the kind of
 * each, and its exception class reads the kind from that table:
 *
 *     export class TransactionException extends DomainException<TransactionErrorCode> {
 *       readonly kind = KIND[this.code];
 *     }
 *
 * Services throw them and never build HTTP responses. The code is sent to clients as the problem's
 * `code`, so codes are part of the API: every code is listed in docs/errors.md.
 */
export abstract class DomainException<Code extends string = string> extends Error {
  abstract readonly kind: DomainErrorKind;

  constructor(
    readonly code: Code,
    readonly detail: string,
    /** Per-field messages, for `invalid` errors that name what was wrong. */
    readonly errors?: FieldErrors,
    /** Response headers the refusal needs (for example `Retry-After` on a conflict that heals). */
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
    this.name = new.target.name;
  }
}

/** Detail line of a validation failure: the one field and its messages, or the list of fields. */
export function validationDetail(errors: FieldErrors): string {
  const paths = Object.keys(errors);
  return paths.length === 1
    ? `${paths[0]}: ${errors[paths[0]].join('; ')}`
    : `The request has ${paths.length} invalid fields: ${paths.join(', ')}`;
}

/** Input that breaks a domain rule, every bad field named by its path (any module). */
export class ValidationException extends DomainException<'validation_failed'> {
  readonly kind = 'invalid';

  constructor(errors: FieldErrors) {
    super('validation_failed', validationDetail(errors), errors);
  }

  /** One bad field. */
  static field(path: string, message: string): ValidationException {
    return new ValidationException({ [path]: [message] });
  }
}
