import { HttpException } from '@nestjs/common';

/** JSON paths of bad fields mapped to their messages (`data.number`, `[3].data.cvc`, `rules[0].priority`). */
export type FieldErrors = Record<string, string[]>;

/**
 * Adds a message for a field path to a FieldErrors map. Paths come from client input (query and body
 * keys), so `__proto__` and friends are stored as own properties, never looked up through the prototype.
 */
export function addFieldError(errors: FieldErrors, path: string, message: string): void {
  if (Object.hasOwn(errors, path)) errors[path].push(message);
  else
    Object.defineProperty(errors, path, {
      value: [message],
      enumerable: true,
      writable: true,
      configurable: true,
    });
}

export interface ProblemExtras {
  /** Per-field validation messages; present on validation failures only. */
  errors?: FieldErrors;
  /** A stable machine-readable code for clients that branch on the kind of failure. */
  code?: string;
  /** Response headers to send with the problem (for example `Retry-After`). */
  headers?: Record<string, string>;
}

/**
 * The one exception type the domain throws: a status, a human-readable detail and optional extras.
 * The global filter renders it as RFC 9457 problem details.
 */
export class ProblemException extends HttpException {
  constructor(
    status: number,
    readonly detail: string,
    readonly extras: ProblemExtras = {},
  ) {
    super(detail, status);
  }
}

export const badRequest = (detail: string, errors?: FieldErrors, code?: string): ProblemException =>
  new ProblemException(400, detail, { errors, code });

/** A 400 for a single bad field, with its path in `errors`. */
export const invalidField = (path: string, message: string): ProblemException =>
  new ProblemException(400, `${path}: ${message}`, {
    errors: { [path]: [message] },
    code: 'validation_failed',
  });

export const unauthorized = (detail: string): ProblemException =>
  new ProblemException(401, detail, { code: 'unauthorized' });

export const forbidden = (detail: string): ProblemException =>
  new ProblemException(403, detail, { code: 'forbidden' });

/** 404 for a resource that is absent or belongs to another tenant (the two are never told apart). */
export const notFound = (what: string): ProblemException =>
  new ProblemException(404, `${what} not found`, { code: 'not_found' });

export const conflict = (detail: string, headers?: Record<string, string>): ProblemException =>
  new ProblemException(409, detail, { code: 'conflict', headers });
