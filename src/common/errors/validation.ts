import { ValidationError, ValidationPipe } from '@nestjs/common';
import { validationDetail } from './domain.exception';
import { FieldErrors, ProblemException } from './problem.exception';

function childPath(parent: string, property: string): string {
  if (/^\d+$/.test(property)) return `${parent}[${property}]`;
  return parent ? `${parent}.${property}` : property;
}

/** Flattens class-validator's error tree into `{ "rules[0].priority": ["..."] }`. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldErrors {
  const out: FieldErrors = {};
  for (const error of errors) {
    const path = childPath(parent, error.property);
    const messages = Object.values(error.constraints ?? {});
    if (messages.length > 0) out[path] = [...(out[path] ?? []), ...messages];
    Object.assign(out, flattenValidationErrors(error.children ?? [], path));
  }
  return out;
}

export function validationProblem(errors: FieldErrors): ProblemException {
  return new ProblemException(400, validationDetail(errors), { errors, code: 'validation_failed' });
}

/** The global pipe: unknown fields rejected, values converted, every bad field reported by path. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => validationProblem(flattenValidationErrors(errors)),
  });
}
