import type { FieldError } from '../shared/protocol';

export interface Problem {
  status: number;
  title?: string;
  detail?: string;
  code?: string;
  errors?: Record<string, string[]>;
}

/** What `init`, `mount` and `tokens.create` reject with: a code, a message, never a card value. */
export class VaultElementsError extends Error {
  readonly code: string;
  status?: number;
  problem?: Problem;
  errors?: FieldError[];

  constructor(
    code: string,
    message: string,
    extra: { status?: number; problem?: Problem; errors?: FieldError[] } = {},
  ) {
    super(`Vault elements: ${message}`);
    this.name = 'VaultElementsError';
    this.code = code;
    if (extra.status !== undefined) this.status = extra.status;
    if (extra.problem !== undefined) this.problem = extra.problem;
    if (extra.errors !== undefined) this.errors = extra.errors;
  }
}
