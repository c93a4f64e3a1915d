/**
 * Token expressions in a proxied request: `{{ <id> }}` or `{{ token: <id> }}`,
 * each optionally followed by `| json: '<path>'` with a path `$`, `$.a`, `$.a.b`. Pure functions: the
 * service finds the expressions, loads what they name, then renders the request with the values.
 */

/** An expression as written, and what it names. */
export interface TokenExpression {
  text: string;
  tokenId: string;
  /** Property names after `$`; empty for the whole value. */
  path: string[];
}

/** A malformed `| json:` path: the expression is named, nothing is sent. */
export class ExpressionError extends Error {
  constructor(
    readonly expression: string,
    reason: string,
  ) {
    super(reason);
  }
}

const TOKEN_ID = '[A-Za-z0-9_-]{1,400}';
const EXPRESSION_SOURCE = `\\{\\{\\s*(?:token\\s*:\\s*)?(${TOKEN_ID})\\s*(?:\\|\\s*json\\s*:\\s*(?:'([^'{}]*)'|"([^"{}]*)")\\s*)?\\}\\}`;
const WHOLE_EXPRESSION = new RegExp(`^${EXPRESSION_SOURCE}$`);
const PATH = /^\$(\.[A-Za-z0-9_]+)*$/;

/** At most this many expressions in one request, naming at most MAX_TOKENS distinct tokens. */
export const MAX_EXPRESSIONS = 1000;
export const MAX_TOKENS = 100;

const expressionsIn = (text: string): RegExpExecArray[] =>
  text.includes('{{') ? [...text.matchAll(new RegExp(EXPRESSION_SOURCE, 'g'))] : [];

function parse(match: RegExpMatchArray): TokenExpression {
  const [text, tokenId, single, double] = match;
  const rawPath = single ?? double;
  if (rawPath !== undefined && !PATH.test(rawPath.trim()))
    throw new ExpressionError(text, "the json path must be $, $.name or $.name.name (letters, digits, '_')");
  const path = rawPath === undefined ? [] : rawPath.trim().split('.').slice(1);
  return { text, tokenId, path };
}

/** Every expression in these texts, by its text (each parsed once). */
export function findExpressions(texts: Iterable<string>): Map<string, TokenExpression> {
  const found = new Map<string, TokenExpression>();
  let count = 0;
  for (const text of texts) {
    for (const match of expressionsIn(text)) {
      if (++count > MAX_EXPRESSIONS)
        throw new ExpressionError(match[0], `a request may hold at most ${MAX_EXPRESSIONS} expressions`);
      if (!found.has(match[0])) found.set(match[0], parse(match));
    }
  }
  return found;
}

/** Every string of a JSON value (keys are not detokenized), without recursion. */
export function* stringsOf(value: unknown): Generator<string> {
  const stack: unknown[] = [value];
  while (stack.length) {
    const current = stack.pop();
    if (typeof current === 'string') yield current;
    else if (current !== null && typeof current === 'object')
      stack.push(...(Object.values(current) as unknown[]));
  }
}

/** The value an expression yields from its token's value: the whole of it, or what its path selects (null when absent). */
export function select(expression: TokenExpression, value: unknown): unknown {
  let current = value;
  for (const name of expression.path) {
    if (
      current === null ||
      typeof current !== 'object' ||
      Array.isArray(current) ||
      !Object.hasOwn(current, name)
    )
      return null;
    current = (current as Record<string, unknown>)[name];
  }
  return current ?? null;
}

/** How a value reads inside text: strings as they are, null as nothing, the rest as JSON. */
const asText = (value: unknown): string =>
  typeof value === 'string' ? value : value === null || value === undefined ? '' : JSON.stringify(value);

export type Values = Map<string, unknown>;

/** Replaces each expression in a text by its value's text. */
export function renderText(text: string, values: Values): string {
  if (!text.includes('{{')) return text;
  return text.replace(new RegExp(EXPRESSION_SOURCE, 'g'), (match) =>
    values.has(match) ? asText(values.get(match)) : match,
  );
}

/** Replaces expressions in a body read byte for byte (latin1), inserting values as UTF-8. */
export function renderBytes(latin1: string, values: Values): Buffer {
  const parts: Buffer[] = [];
  let last = 0;
  for (const match of expressionsIn(latin1)) {
    if (!values.has(match[0])) continue;
    parts.push(Buffer.from(latin1.slice(last, match.index), 'latin1'));
    parts.push(Buffer.from(asText(values.get(match[0])), 'utf8'));
    last = match.index + match[0].length;
  }
  parts.push(Buffer.from(latin1.slice(last), 'latin1'));
  return Buffer.concat(parts);
}

/**
 * Renders a parsed JSON body: a string that is exactly one expression becomes the JSON value it yields
 * (an object stays an object); expressions inside longer strings are replaced by their text.
 */
export function renderJson(value: unknown, values: Values): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE_EXPRESSION.exec(value);
    if (whole && values.has(whole[0])) return values.get(whole[0]);
    return renderText(value, values);
  }
  if (Array.isArray(value)) return value.map((item) => renderJson(item, values));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(out, key, {
        value: renderJson(item, values),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** How many bytes a string takes in some encoding. */
type Measure = (text: string) => number;

const utf8Bytes: Measure = (text) => Buffer.byteLength(text, 'utf8');
const latin1Bytes: Measure = (text) => text.length;

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;
const SHORT_ESCAPES = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x22, 0x5c]);

/** Bytes of `JSON.stringify(text)` without its quotes, in UTF-8 (escapes counted, nothing built). */
const jsonStringBytes: Measure = (text) => {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (SHORT_ESCAPES.has(code)) bytes += 2;
    else if (code < 0x20) bytes += 6;
    else if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (isHighSurrogate(code) && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else if (isHighSurrogate(code) || isLowSurrogate(code)) bytes += 6;
    else bytes += 3;
  }
  return bytes;
};

const FORM_SAFE = /[A-Za-z0-9*\-._ ]/;

/** Characters of the text once `application/x-www-form-urlencoded` (as URLSearchParams writes it). */
const formBytes: Measure = (text) => {
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) length += FORM_SAFE.test(text[i]) ? 1 : 3;
    else if (code < 0x800) length += 6;
    else if (isHighSurrogate(code) && isLowSurrogate(text.charCodeAt(i + 1))) {
      length += 12;
      i++;
    } else length += 9; // three bytes, a lone surrogate becoming U+FFFD included
  }
  return length;
};

/** The kind of measure of a value written as JSON (the others are keyed by their Measure). */
const JSON_VALUE = {};

/**
 * The sizes a request will have once detokenized, computed from the request and the values without
 * building anything: each value is measured once however often it is named, so a request naming a
 * large token a thousand times costs a thousand additions, not a thousand copies.
 */
export class RenderedSizes {
  private readonly measured = new Map<object, Map<unknown, number>>();

  constructor(private readonly values: Values) {}

  /** Bytes of UTF-8 of a header value (or any text) once its expressions are replaced. */
  text(text: string): number {
    return this.measureText(text, utf8Bytes, utf8Bytes);
  }

  /** Bytes of a body read as latin1 once its expressions are replaced by UTF-8 text (renderBytes). */
  bytes(latin1: string): number {
    return this.measureText(latin1, latin1Bytes, utf8Bytes);
  }

  /** Length of the query string URLSearchParams writes for these pairs once rendered. */
  queryString(pairs: [string, string][]): number {
    let length = Math.max(pairs.length - 1, 0);
    for (const [name, value] of pairs)
      length +=
        this.measureText(name, formBytes, formBytes) + 1 + this.measureText(value, formBytes, formBytes);
    return length;
  }

  /** Bytes of `JSON.stringify(renderJson(parsed))`, from the size of the body as it came. */
  json(parsed: unknown): number {
    let bytes = utf8Bytes(JSON.stringify(parsed) ?? '');
    for (const text of stringsOf(parsed)) {
      if (!text.includes('{{')) continue;
      const whole = WHOLE_EXPRESSION.exec(text);
      const rendered =
        whole && this.values.has(whole[0])
          ? this.jsonValue(this.values.get(whole[0]))
          : 2 + this.measureText(text, jsonStringBytes, jsonStringBytes);
      bytes += rendered - (2 + jsonStringBytes(text));
    }
    return bytes;
  }

  private measureText(text: string, literal: Measure, inserted: Measure): number {
    if (!text.includes('{{')) return literal(text);
    let total = 0;
    let last = 0;
    for (const match of expressionsIn(text)) {
      if (!this.values.has(match[0])) continue;
      const value = this.values.get(match[0]);
      total +=
        literal(text.slice(last, match.index)) + this.once(inserted, value, () => inserted(asText(value)));
      last = match.index + match[0].length;
    }
    return total + literal(text.slice(last));
  }

  /** Bytes of a value written as JSON (a whole-expression string of a JSON body). */
  private jsonValue(value: unknown): number {
    return this.once(JSON_VALUE, value, () => utf8Bytes(JSON.stringify(value ?? null)));
  }

  /** Measures a value once per kind of measure (a value is shared by every expression naming it). */
  private once(kind: object, value: unknown, measure: () => number): number {
    let sizes = this.measured.get(kind);
    if (!sizes) this.measured.set(kind, (sizes = new Map<unknown, number>()));
    let size = sizes.get(value);
    if (size === undefined) sizes.set(value, (size = measure()));
    return size;
  }
}
