import { invalidField } from '../errors/problem.exception';

/** The `pagination` member of a cursor-paginated list: `after` is absent on the last page. */
export interface CursorPagination {
  page_size: number;
  after?: string;
}

export interface CursorPage<T> {
  pagination: CursorPagination;
  data: T[];
}

/** Keyset cursor parts: a timestamp with microseconds (as Postgres keeps it) and a uuid. */
export const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
export const CURSOR_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** SQL for a row's keyset timestamp, exact to the microsecond, to put in a cursor. */
export const cursorTimeSql = (column: string): string =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** An opaque cursor: the keyset values of the last row of a page, base64url-encoded. */
export function encodeCursor(values: string[]): string {
  return Buffer.from(JSON.stringify(values), 'utf8').toString('base64url');
}

/**
 * Decodes a cursor made by `encodeCursor`, checking each value against its pattern; anything else is a
 * 400 naming the `start` parameter.
 */
export function decodeCursor(cursor: string, patterns: RegExp[]): string[] {
  const bad = () => invalidField('start', 'start is not a cursor returned by this list');
  // Room for a timestamp and a token id of 400 characters, base64url-encoded JSON.
  if (!/^[A-Za-z0-9_-]{1,1000}$/.test(cursor)) throw bad();
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (
    !Array.isArray(values) ||
    values.length !== patterns.length ||
    !values.every((v, i) => typeof v === 'string' && patterns[i].test(v))
  )
    throw bad();
  return values as string[];
}
