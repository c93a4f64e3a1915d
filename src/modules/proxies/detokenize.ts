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

const expressionsIn = (text: string): RegExpMatchArray[] =>
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
