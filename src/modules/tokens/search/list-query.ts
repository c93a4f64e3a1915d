import { ValidationException } from '../../../common/errors/domain.exception';
import type { PipeTransform } from '@nestjs/common';
import { addFieldError } from '../../../common/errors/problem.exception';
import type { FieldErrors } from '../../../common/errors/problem.exception';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../../common/pagination/offset-pagination.dto';
import { isTokenId, normalizeTokenId } from '../data/token-id';
import { isPlainObject } from '../tokenize/tokenize-request';

/** At most this many `id` values in one `GET /tokens`. */
export const MAX_LIST_IDS = 100;

/** Filters shared by the token lists and searches, v1 and v2. */
export interface TokenFilters {
  ids: string[];
  /** `GET /tokens?id=a&id=b`: the token is one of these (absent: no such filter). */
  anyOfIds?: string[];
  types: string[];
  fingerprints: string[];
  containers: string[];
  metadata: [string, string][];
  /** Plain values to look up through search indexes (digested before querying). */
  dataValues: string[];
}

export const emptyFilters = (): TokenFilters => ({
  ids: [],
  types: [],
  fingerprints: [],
  containers: [],
  metadata: [],
  dataValues: [],
});

/** A token list query, parsed: its filters and its page (`page` in v1, `start` in v2). */
export interface TokenListQuery {
  filters: TokenFilters;
  page: number;
  size: number;
  start?: string;
}

/** v1 (`GET /tokens`): offset pages, `metadata.<name>=<value>`; v2 (`GET /v2/tokens`): cursor pages, `metadata=<JSON object>`. */
export type TokenListVersion = 'v1' | 'v2';

const METADATA_KEY = /^metadata\.[A-Za-z0-9_-]{1,128}$/;

/** `metadata` of a v2 list: a JSON object of string values, as the Basis Theory SDK sends it. */
function addMetadataJson(filters: TokenFilters, text: string, errors: FieldErrors): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!isPlainObject(parsed) || Object.values(parsed).some((v) => typeof v !== 'string'))
    addFieldError(errors, 'metadata', 'metadata must be a JSON object of string values');
  else filters.metadata.push(...Object.entries(parsed as Record<string, string>));
}

/**
 * The one parser of token list query strings, v1 and v2: `type`, `container` and `fingerprint`
 * (repeatable), `size`, then `page`, `id` (repeatable) and `metadata.<name>` (v1) or `start` and
 * `metadata` (v2). Every bad or unknown parameter is reported by name in one 400.
 */
export function parseListQuery(query: Record<string, unknown>, version: TokenListVersion): TokenListQuery {
  const errors: FieldErrors = {};
  const parsed: TokenListQuery = { filters: emptyFilters(), page: 1, size: DEFAULT_PAGE_SIZE };
  const { filters } = parsed;
  for (const [key, raw] of Object.entries(query)) {
    const values = Array.isArray(raw) ? raw : [raw];
    if (values.some((v) => typeof v !== 'string')) {
      addFieldError(errors, key, `${key} must be a plain value`);
      continue;
    }
    const strings = values as string[];
    if (key === 'size' || (key === 'page' && version === 'v1')) {
      const n = Number(strings[0]);
      const max = key === 'size' ? MAX_PAGE_SIZE : Number.MAX_SAFE_INTEGER;
      if (!/^\d+$/.test(strings[0]) || n < 1 || n > max)
        addFieldError(
          errors,
          key,
          `${key} must be an integer from 1${key === 'size' ? ` to ${MAX_PAGE_SIZE}` : ''}`,
        );
      else parsed[key] = n;
    } else if (key === 'start' && version === 'v2') parsed.start = strings[0];
    else if (key === 'id' && version === 'v1') {
      if (strings.length > MAX_LIST_IDS)
        addFieldError(errors, key, `at most ${MAX_LIST_IDS} ids; this list has ${strings.length}`);
      else if (!strings.every(isTokenId))
        addFieldError(errors, key, 'each id must be 1 to 400 characters of letters, digits, _ and -');
      else filters.anyOfIds = [...new Set(strings.map(normalizeTokenId))];
    } else if (key === 'type') filters.types.push(...strings);
    else if (key === 'container') filters.containers.push(...strings);
    else if (key === 'fingerprint') filters.fingerprints.push(...strings);
    else if (key === 'metadata' && version === 'v2')
      for (const text of strings) addMetadataJson(filters, text, errors);
    else if (METADATA_KEY.test(key) && version === 'v1')
      filters.metadata.push(...strings.map((v): [string, string] => [key.slice('metadata.'.length), v]));
    else addFieldError(errors, key, `property ${key} should not exist`);
  }
  if (Object.keys(errors).length) throw new ValidationException(errors);
  return parsed;
}

/** The query of a token list, parsed at the edge: `@Query(new TokenListQueryPipe('v1'))`. */
export class TokenListQueryPipe implements PipeTransform<Record<string, unknown>, TokenListQuery> {
  constructor(private readonly version: TokenListVersion) {}

  transform(query: Record<string, unknown>): TokenListQuery {
    return parseListQuery(query, this.version);
  }
}
