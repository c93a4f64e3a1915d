import { addFieldError } from '../../common/errors/problem.exception';
import type { FieldErrors } from '../../common/errors/problem.exception';

/** Filters shared by `GET /tokens` and `POST /tokens/search`. */
export interface TokenFilters {
  ids: string[];
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TERM = /\s*([a-z_]+(?:\.[A-Za-z0-9_-]{1,128})?):(?:"((?:[^"\\]|\\.)*)"|([^\s"]+))\s*/y;

function addTerm(filters: TokenFilters, field: string, value: string, errors: FieldErrors): void {
  if (field === 'id') {
    if (!UUID.test(value)) addFieldError(errors, 'query', `id:${value} is not a uuid`);
    else filters.ids.push(value.toLowerCase());
  } else if (field === 'type') filters.types.push(value);
  else if (field === 'fingerprint') filters.fingerprints.push(value);
  else if (field === 'container') filters.containers.push(value);
  else if (field === 'data') filters.dataValues.push(value);
  else if (field.startsWith('metadata.')) filters.metadata.push([field.slice('metadata.'.length), value]);
  else addFieldError(errors, 'query', `unknown search field ${field}`);
}

/**
 * Parses the search language: space-separated `field:value` terms, all of which must match; values with
 * spaces in double quotes. Fields: id, type, fingerprint, container, metadata.<name>, data.
 */
export function parseSearchQuery(query: string, errors: FieldErrors): TokenFilters {
  const filters = emptyFilters();
  TERM.lastIndex = 0;
  let position = 0;
  while (position < query.length) {
    TERM.lastIndex = position;
    const match = TERM.exec(query);
    if (!match) {
      if (query.slice(position).trim() === '') break;
      addFieldError(errors, 'query', `cannot parse the query at character ${position + 1}`);
      return filters;
    }
    const value = match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3];
    addTerm(filters, match[1], value, errors);
    position = TERM.lastIndex;
  }
  return filters;
}
