import { passesLuhn } from '../tokens/data/card-rules';

/**
 * One line of an import file read into a card, or the reason it cannot be (docs/migration.md). Pure: no
 * I/O, no keys. An error names a field of the format (a fixed name, never a value of the file) or none,
 * and a fixed code: nothing of a line, least of all a digit of its card number, is ever repeated.
 */

/** The columns (CSV) and fields (JSONL) of a line; `metadata.<name>` besides. */
export const IMPORT_FIELDS = [
  'number',
  'expiration_month',
  'expiration_year',
  'holder_name',
  'external_id',
  'buyer_external_id',
  'connection_id',
  'connection_token',
  'connection_customer',
  'network_transaction_id',
] as const;
export type ImportField = (typeof IMPORT_FIELDS)[number] | 'metadata';
const REQUIRED = ['number', 'expiration_month', 'expiration_year'] as const;
const METADATA_PREFIX = 'metadata.';

/** A line is at most this many bytes: a card with 20 metadata values fits many times over. */
export const MAX_LINE_BYTES = 64 * 1024;

export interface LineError {
  field: ImportField | null;
  code: string;
}

/** A processor's token for the card, as the line gives it (kept sealed, never in clear at rest). */
export interface ConnectionToken {
  connection_id: string;
  connection_token: string;
  connection_customer?: string;
  network_transaction_id?: string;
}

export interface ImportedCard {
  number: string;
  expirationMonth: number;
  expirationYear: number;
  holderName?: string;
  metadata: Record<string, string> | null;
}

export type ParsedLine =
  | {
      line: number;
      ok: true;
      externalId: string | null;
      buyerExternalId: string | null;
      card: ImportedCard;
      connection: ConnectionToken | null;
    }
  | { line: number; ok: false; externalId: string | null; error: LineError };

const fail = (line: number, field: ImportField | null, code: string, externalId: string | null = null) =>
  ({ line, ok: false, externalId, error: { field, code } }) as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DIGIT_RUNS = /\d[\d -]{11,}\d/g;

/** Holds what looks like a card number (a Luhn-valid run of 13 to 19 digits, spaces or dashes between). */
export function looksLikeCardNumber(text: string): boolean {
  for (const [run] of text.matchAll(DIGIT_RUNS)) {
    const digits = run.replace(/[ -]/g, '');
    for (let len = 13; len <= 19; len++)
      for (let at = 0; at + len <= digits.length; at++)
        if (passesLuhn(digits.slice(at, at + len))) return true;
  }
  return false;
}

/** A CSV header: the column names, or why the file cannot be read (the job fails with that code). */
export function csvColumns(header: string): { columns: string[] } | { error: string } {
  const columns = csvRecord(header)?.map((c) => c.trim().toLowerCase());
  if (!columns) return { error: 'malformed_header' };
  const known = (c: string) =>
    (IMPORT_FIELDS as readonly string[]).includes(c) ||
    (c.startsWith(METADATA_PREFIX) && c.length > METADATA_PREFIX.length && c.length <= 128 + 9);
  if (!columns.every(known)) return { error: 'unknown_column' };
  if (new Set(columns).size !== columns.length) return { error: 'duplicate_column' };
  if (!REQUIRED.every((c) => columns.includes(c))) return { error: 'missing_column' };
  return { columns };
}

/** One CSV record on one line (RFC 4180 quoting, `""` for a quote); undefined when its quotes are broken. */
export function csvRecord(text: string): string[] | undefined {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    if (text[i] === '"') {
      let value = '';
      i++;
      for (;;) {
        const quote = text.indexOf('"', i);
        if (quote < 0) return undefined;
        value += text.slice(i, quote);
        if (text[quote + 1] === '"') {
          value += '"';
          i = quote + 2;
        } else {
          i = quote + 1;
          break;
        }
      }
      fields.push(value);
      if (i === text.length) return fields;
      if (text[i] !== ',') return undefined;
      i++;
    } else {
      const comma = text.indexOf(',', i);
      const end = comma < 0 ? text.length : comma;
      const value = text.slice(i, end);
      if (value.includes('"')) return undefined;
      fields.push(value);
      if (comma < 0) return fields;
      i = comma + 1;
    }
  }
}

/** A CSV data line against its header's columns: the record, or its error. */
export function csvLine(line: number, text: string, columns: string[], now: Date): ParsedLine {
  const values = csvRecord(text);
  if (!values) return fail(line, null, 'malformed_csv');
  if (values.length !== columns.length) return fail(line, null, 'wrong_column_count');
  const record: Record<string, unknown> = {};
  columns.forEach((column, i) => {
    if (values[i] !== '') record[column] = values[i];
  });
  return cardLine(line, record, now);
}

/** A JSONL line: one JSON object, its fields flat (`metadata.<name>`) or `metadata` as an object. */
export function jsonLine(line: number, text: string, now: Date): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return fail(line, null, 'invalid_json');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail(line, null, 'not_an_object');
  const record: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    if (item === null) continue;
    if (key === 'metadata' && typeof item === 'object' && !Array.isArray(item)) {
      for (const [name, meta] of Object.entries(item as Record<string, unknown>))
        record[`${METADATA_PREFIX}${name}`] = meta;
    } else if ((IMPORT_FIELDS as readonly string[]).includes(key) || key.startsWith(METADATA_PREFIX))
      record[key] = item;
    else return fail(line, null, 'unknown_field', externalIdOf(value));
  }
  return cardLine(line, record, now);
}

/** The external id a failed line can still be reported with: a short string that holds no card number. */
function externalIdOf(value: unknown): string | null {
  const id = (value as { external_id?: unknown }).external_id;
  return typeof id === 'string' && id.length <= 200 && !looksLikeCardNumber(id) ? id : null;
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;

const integer = (value: unknown, pattern: RegExp): number | undefined => {
  const t = typeof value === 'number' && Number.isInteger(value) ? String(value) : text(value)?.trim();
  return t !== undefined && pattern.test(t) ? Number(t) : undefined;
};

/**
 * The checks of one line's fields, in a fixed order, the first failure reported: the card as tokenize
 * checks it (docs/tokens.md), then the names and ids, then the processor's token.
 */
export function cardLine(line: number, record: Record<string, unknown>, now: Date): ParsedLine {
  const externalId = externalIdOf(record);
  const bad = (field: ImportField | null, code: string) => fail(line, field, code, externalId);
  for (const field of REQUIRED) if (record[field] === undefined) return bad(field, 'missing');
  const raw = text(record.number);
  if (raw === undefined || typeof record.number !== 'string') return bad('number', 'invalid');
  const number = raw.replace(/[\s-]/g, '');
  if (!/^\d{13,19}$/.test(number)) return bad('number', 'invalid');
  if (!passesLuhn(number)) return bad('number', 'luhn_check_failed');
  const month = integer(record.expiration_month, /^\d{1,2}$/);
  if (month === undefined || month < 1 || month > 12) return bad('expiration_month', 'invalid');
  const year = integer(record.expiration_year, /^\d{4}$/);
  if (year === undefined) return bad('expiration_year', 'invalid');
  if (year * 12 + month - 1 < now.getUTCFullYear() * 12 + now.getUTCMonth())
    return bad('expiration_year', 'expired');

  const strings: Partial<Record<ImportField, string>> = {};
  for (const field of IMPORT_FIELDS.slice(3)) {
    const value = record[field];
    if (value === undefined) continue;
    const t = typeof value === 'string' ? value : undefined;
    if (t === undefined || t.length > (field === 'connection_token' ? 500 : 200))
      return bad(field, 'invalid');
    // Answered with the results, or written in clear (buyers): never a card number.
    if ((field === 'external_id' || field === 'buyer_external_id') && looksLikeCardNumber(t))
      return bad(field, 'looks_like_card_number');
    strings[field] = t;
  }
  const names = Object.keys(record).filter((k) => k.startsWith(METADATA_PREFIX));
  let metadata: Record<string, string> | null = null;
  if (names.length > 20) return bad('metadata', 'too_many_keys');
  for (const key of names) {
    const name = key.slice(METADATA_PREFIX.length);
    const value = record[key];
    if (!name || name.length > 128) return bad('metadata', 'invalid');
    if (typeof value !== 'string' || value.length > 1024) return bad('metadata', 'invalid');
    if (looksLikeCardNumber(value)) return bad('metadata', 'looks_like_card_number');
    (metadata ??= {})[name] = value;
  }

  const connection = connectionOf(strings);
  if ('error' in connection) return bad(connection.error.field, connection.error.code);
  return {
    line,
    ok: true,
    externalId: strings.external_id ?? null,
    buyerExternalId: strings.buyer_external_id ?? null,
    card: {
      number,
      expirationMonth: month,
      expirationYear: year,
      ...(strings.holder_name ? { holderName: strings.holder_name } : {}),
      metadata,
    },
    connection: connection.token,
  };
}

function connectionOf(
  s: Partial<Record<ImportField, string>>,
): { token: ConnectionToken | null } | { error: LineError } {
  const { connection_id: id, connection_token: token } = s;
  if (id === undefined && token === undefined) {
    if (s.connection_customer !== undefined || s.network_transaction_id !== undefined)
      return { error: { field: 'connection_token', code: 'missing' } };
    return { token: null };
  }
  if (id === undefined) return { error: { field: 'connection_id', code: 'missing' } };
  if (!UUID.test(id)) return { error: { field: 'connection_id', code: 'invalid' } };
  if (token === undefined) return { error: { field: 'connection_token', code: 'missing' } };
  if (!/^\S{1,500}$/.test(token)) return { error: { field: 'connection_token', code: 'invalid' } };
  if (s.network_transaction_id !== undefined && !/^[\x21-\x7e]{1,100}$/.test(s.network_transaction_id))
    return { error: { field: 'network_transaction_id', code: 'invalid' } };
  return {
    token: {
      connection_id: id.toLowerCase(),
      connection_token: token,
      ...(s.connection_customer !== undefined ? { connection_customer: s.connection_customer } : {}),
      ...(s.network_transaction_id !== undefined ? { network_transaction_id: s.network_transaction_id } : {}),
    },
  };
}
