import { isInstant, parseInstant } from '../../../common/dates';
import { CONTAINER_FORMAT, CONTAINER_PATTERN } from '../../../common/auth/access-rule';
import { addFieldError, type FieldErrors } from '../../../common/errors/problem.exception';
import type { ExpressionBatch, ExpressionOutcome } from '../expressions/expression-evaluator';
import { ExpressionError } from '../expressions/expression-engine';
import { isTokenId, normalizeTokenId, TOKEN_ID_FORMAT } from '../data/token-id';
import { TOKEN_TYPES, TokenType, TYPE_DEFAULTS, ValidatedData, validateData } from '../data/validate-data';
import type { ChangeWrites } from '../../../common/unit-of-work/write-batch';

/** How `TokenizeService.createOne` makes its token. */
export interface CreateOneOptions {
  /** The element is a wallet payload the vault verified and decrypted itself (docs/wallets.md). */
  fromWallet?: boolean;
  /** Writes of the token's change beside the token (given its id): they commit with it or fail it. */
  alsoWrite?: (change: ChangeWrites, tokenId: string) => Promise<void>;
}

export const MAX_TOKENS_PER_REQUEST = 100;
/**
 * Token data is at most this many bytes as JSON (UTF-8): the proxy inserts it into requests, possibly
 * many times, so its size bounds what one request can make the server build.
 */
export const MAX_DATA_BYTES = 64 * 1024;
export const DATA_SIZE_FORMAT = 'data must be at most 64 KiB as JSON';

/** Whether a value's JSON text is over MAX_DATA_BYTES bytes of UTF-8. */
export function isOversizedData(data: unknown): boolean {
  const json = JSON.stringify(data) as string | undefined;
  // A string is at least as many bytes as characters, at most three per UTF-16 unit.
  if (json === undefined || json.length * 3 <= MAX_DATA_BYTES) return false;
  return json.length > MAX_DATA_BYTES || Buffer.byteLength(json, 'utf8') > MAX_DATA_BYTES;
}
const MAX_DEPTH = 32;
const ELEMENT_FIELDS = [
  'type',
  'data',
  'id',
  'metadata',
  'search_indexes',
  'fingerprint_expression',
  'containers',
  'expires_at',
  'deduplicate_token',
];

/** One token to create, validated, with its expressions already evaluated (values stay in memory only). */
export interface ParsedElement {
  path: string;
  id?: string;
  type: TokenType;
  validated: ValidatedData;
  metadata: Record<string, string> | null;
  searchIndexes: string[] | null;
  fingerprintExpression: string;
  containers: string[];
  expiresAt: Date | null;
  deduplicate: boolean;
  /** Plain results of the expressions (set by `applyEvaluations`); turned into HMAC digests before storing. */
  fingerprintInput: string;
  indexValues: string[];
}

/** Checks an expression without running it (ExpressionEvaluator.validate). */
export interface ExpressionValidator {
  validate(template: string): void;
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** An object is a token request element when it has both `type` and `data`. */
export const isElement = (value: unknown): value is Record<string, unknown> =>
  isPlainObject(value) && 'type' in value && 'data' in value;

export const childPath = (parent: string, key: string | number): string =>
  typeof key === 'number' ? `${parent}[${key}]` : parent ? `${parent}.${key}` : key;

const add = addFieldError;

/** The shape checks of fields that both a token request and `PATCH /tokens/{id}` (UpdateTokenDto) take. */
export const EXPIRES_AT_FORMAT =
  'expires_at must be an ISO 8601 date-time (YYYY-MM-DDThh:mm[:ss[.f]] with Z, ±hh:mm or ±hhmm; none is UTC) or date (YYYY-MM-DD)';
export const SEARCH_INDEXES_FORMAT = 'search_indexes must be an array of at most 20 non-empty expressions';
export const FINGERPRINT_EXPRESSION_FORMAT = 'fingerprint_expression must be a non-empty expression';

/** An ISO 8601 date-time or date: see parseInstant. */
export const isDateTime = isInstant;

export const isExpression = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0;

export const isExpressionList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.length <= 20 && value.every(isExpression);

/**
 * PATCH semantics for metadata: null clears it, a null value removes a key, other values replace; the
 * result is checked as on create and an empty result is no metadata.
 */
export function mergeMetadata(
  current: Record<string, string> | null,
  patch: Record<string, unknown> | null | undefined,
  errors: FieldErrors,
): Record<string, string> | null {
  if (patch === undefined) return current;
  if (patch === null) return null;
  const merged: Record<string, unknown> = { ...(current ?? {}) };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  const metadata = parseMetadata(merged, 'metadata', errors);
  return metadata && Object.keys(metadata).length === 0 ? null : metadata;
}

/** A slot of the request: a plain string (a `token` token whose id replaces it) or an element. */
export interface Slot {
  path: string;
  raw: string | Record<string, unknown>;
}

/** Walks any body shape in document order, collecting token slots; reports bad leaves by path. */
export function collectSlots(body: unknown, errors: FieldErrors): Slot[] {
  const slots: Slot[] = [];
  const walk = (value: unknown, path: string, depth: number): void => {
    if (depth > MAX_DEPTH) return add(errors, path, `nesting deeper than ${MAX_DEPTH} levels`);
    if (typeof value === 'string') slots.push({ path, raw: value });
    else if (isElement(value)) slots.push({ path, raw: value });
    else if (Array.isArray(value)) value.forEach((item, i) => walk(item, childPath(path, i), depth + 1));
    else if (isPlainObject(value))
      for (const [key, item] of Object.entries(value)) walk(item, childPath(path, key), depth + 1);
    else
      add(
        errors,
        path || '(body)',
        'expected a string, a token request (type and data), or an object or array of them',
      );
  };
  walk(body, '', 0);
  return slots;
}

/** Rebuilds the request's shape, putting each slot's result where the slot was (same traversal order). */
export function rebuild(body: unknown, results: unknown[]): unknown {
  let next = 0;
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string' || isElement(value)) return results[next++];
    if (Array.isArray(value)) return value.map(walk);
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, walk(v)]));
  };
  return walk(body);
}

export function parseMetadata(
  value: unknown,
  path: string,
  errors: FieldErrors,
): Record<string, string> | null {
  if (value === undefined || value === null) return null;
  if (!isPlainObject(value)) {
    add(errors, path, 'metadata must be an object of strings');
    return null;
  }
  const entries = Object.entries(value);
  if (entries.length > 20) add(errors, path, 'metadata has more than 20 keys');
  for (const [key, item] of entries) {
    if (key.length < 1 || key.length > 128)
      add(errors, path, `metadata key names must be 1 to 128 characters`);
    if (typeof item !== 'string' || item.length > 1024)
      add(errors, childPath(path, key), 'must be a string of at most 1024 characters');
  }
  return value as Record<string, string>;
}

export function parseExpiresAt(value: unknown, path: string, now: Date, errors: FieldErrors): Date | null {
  if (value === undefined || value === null) return null;
  if (!isDateTime(value)) {
    add(errors, path, EXPIRES_AT_FORMAT);
    return null;
  }
  const date = parseInstant(value)!;
  if (date.getTime() <= now.getTime()) add(errors, path, 'expires_at must be in the future');
  return date;
}

/** What an element's expressions run over: its data without the card CVC (a digest of 3 digits would give it away). */
export function expressionBatch(element: {
  validated: ValidatedData;
  fingerprintExpression: string;
  searchIndexes: string[] | null;
}): ExpressionBatch {
  return {
    data: element.validated.data,
    templates: [element.fingerprintExpression, ...(element.searchIndexes ?? [])],
  };
}

/**
 * Takes the outcomes of `expressionBatch` back: the fingerprint input and the non-empty index values,
 * or an error at the expression's path (a fixed reason: never the data).
 */
export function applyEvaluation(
  outcomes: ExpressionOutcome[],
  path: string,
  errors: FieldErrors,
): { fingerprintInput: string; indexValues: string[] } {
  const failed = (outcome: ExpressionOutcome): outcome is ExpressionError =>
    outcome instanceof ExpressionError;
  const [fingerprint, ...indexes] = outcomes;
  if (failed(fingerprint)) add(errors, childPath(path, 'fingerprint_expression'), fingerprint.message);
  const indexValues: string[] = [];
  indexes.forEach((outcome, i) => {
    if (failed(outcome)) add(errors, childPath(childPath(path, 'search_indexes'), i), outcome.message);
    else if (typeof outcome === 'string' && outcome !== '') indexValues.push(outcome);
  });
  return { fingerprintInput: typeof fingerprint === 'string' ? fingerprint : '', indexValues };
}

export function parseSearchIndexes(
  value: unknown,
  path: string,
  engine: ExpressionValidator,
  errors: FieldErrors,
): string[] | null {
  if (value === undefined || value === null) return null;
  if (!isExpressionList(value)) {
    add(errors, path, SEARCH_INDEXES_FORMAT);
    return null;
  }
  value.forEach((expression, i) => {
    try {
      engine.validate(expression);
    } catch (error) {
      add(
        errors,
        childPath(path, i),
        error instanceof ExpressionError ? error.message : 'invalid expression',
      );
    }
  });
  return value;
}

export function parseFingerprintExpression(
  value: unknown,
  type: TokenType,
  path: string,
  engine: ExpressionValidator,
  errors: FieldErrors,
): string {
  if (value === undefined || value === null) return TYPE_DEFAULTS[type].fingerprintExpression;
  if (!isExpression(value)) {
    add(errors, path, FINGERPRINT_EXPRESSION_FORMAT);
    return '';
  }
  try {
    engine.validate(value);
  } catch (error) {
    add(errors, path, error instanceof ExpressionError ? error.message : 'invalid expression');
  }
  return value;
}

/** Validates one element (from tokenize or POST /tokens); every problem is reported under `path`. */
export function parseElement(
  raw: string | Record<string, unknown>,
  path: string,
  now: Date,
  engine: ExpressionValidator,
  errors: FieldErrors,
): ParsedElement | undefined {
  const element: Record<string, unknown> = typeof raw === 'string' ? { type: 'token', data: raw } : raw;
  const start = Object.keys(errors).length;
  for (const key of Object.keys(element)) {
    if (!ELEMENT_FIELDS.includes(key)) add(errors, childPath(path, key), `property ${key} should not exist`);
  }
  const type = element.type as TokenType;
  if (!TOKEN_TYPES.includes(type)) {
    add(errors, childPath(path, 'type'), `type must be one of ${TOKEN_TYPES.join(', ')}`);
    return undefined;
  }
  const oversized = isOversizedData(element.data);
  if (oversized) add(errors, childPath(path, 'data'), DATA_SIZE_FORMAT);
  const validated = oversized
    ? undefined
    : validateData(type, element.data, childPath(path, 'data'), now, errors);
  let id: string | undefined;
  if (element.id !== undefined) {
    if (!isTokenId(element.id)) add(errors, childPath(path, 'id'), TOKEN_ID_FORMAT);
    else id = normalizeTokenId(element.id);
  }
  const metadata = parseMetadata(element.metadata, childPath(path, 'metadata'), errors);
  const searchIndexes = parseSearchIndexes(
    element.search_indexes,
    childPath(path, 'search_indexes'),
    engine,
    errors,
  );
  const fingerprintExpression = parseFingerprintExpression(
    element.fingerprint_expression,
    type,
    childPath(path, 'fingerprint_expression'),
    engine,
    errors,
  );
  let containers = TYPE_DEFAULTS[type].containers;
  if (element.containers !== undefined) {
    const value = element.containers;
    if (!Array.isArray(value) || value.length === 0 || value.length > 10) {
      add(errors, childPath(path, 'containers'), 'containers must be an array of 1 to 10 container paths');
    } else {
      value.forEach((c, i) => {
        if (typeof c !== 'string' || !CONTAINER_PATTERN.test(c)) {
          add(errors, childPath(childPath(path, 'containers'), i), CONTAINER_FORMAT);
        }
      });
      containers = [...new Set(value as string[])];
    }
  }
  const expiresAt = parseExpiresAt(element.expires_at, childPath(path, 'expires_at'), now, errors);
  if (element.deduplicate_token !== undefined && typeof element.deduplicate_token !== 'boolean') {
    add(errors, childPath(path, 'deduplicate_token'), 'deduplicate_token must be a boolean');
  }
  if (!validated || Object.keys(errors).length > start) return undefined;
  return {
    path,
    id,
    type,
    validated,
    metadata,
    searchIndexes,
    fingerprintExpression,
    containers,
    expiresAt,
    deduplicate: element.deduplicate_token === true,
    fingerprintInput: '',
    indexValues: [],
  };
}
