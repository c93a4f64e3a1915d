import { Liquid, Output, Template } from 'liquidjs';

/** The bounds every expression lives within. */
export const MAX_TEMPLATE_LENGTH = 1_000;
export const MAX_RESULT_BYTES = 4_096;
export const EXPRESSION_TIME_LIMIT_MS = 50;
const MEMORY_LIMIT = 1_000_000;
const CACHE_LIMIT = 1_000;

/**
 * Why an expression was refused. Each reason has one fixed message: an error never carries a value,
 * a variable name or an excerpt that came from the data the expression ran over.
 */
export const EXPRESSION_FAILURES = {
  too_long: `expression is longer than ${MAX_TEMPLATE_LENGTH} characters`,
  syntax: 'expression is not valid Liquid',
  tag: 'expression may not use tags ({% %}); only {{ }} output with filters is allowed',
  unknown_filter: 'expression uses a filter that is not available',
  unknown_variable: 'expression refers to a variable or field that the data does not have',
  too_large: 'expression output or a filter result exceeds 4 KiB',
  memory: 'expression needs more memory than allowed',
  too_slow: `expression took longer than ${EXPRESSION_TIME_LIMIT_MS} ms to evaluate`,
  invalid: 'expression cannot be evaluated',
} as const;
export type ExpressionFailure = keyof typeof EXPRESSION_FAILURES;

export class ExpressionError extends Error {
  constructor(readonly reason: ExpressionFailure) {
    super(EXPRESSION_FAILURES[reason]);
  }
}

const text = (value: unknown): string =>
  value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);

/**
 * Basis Theory's filters. Sizes are clamped before anything is allocated, so a
 * pad of a million characters never builds one.
 */
const CUSTOM_FILTERS: Record<string, (value: unknown, ...args: unknown[]) => unknown> = {
  stringify: (value) => JSON.stringify(value),
  json_stringify: (value) => JSON.stringify(value),
  last4: (value) => text(value).slice(-4),
  reveal_last: (value, n) => {
    const s = text(value);
    const keep = Math.max(0, Math.min(Number(n) || 0, s.length));
    return 'X'.repeat(s.length - keep) + s.slice(s.length - keep);
  },
  card_bin: (value) => {
    const digits = text(value).replace(/\D/g, '');
    return digits.slice(0, digits.length >= 16 ? 8 : 6);
  },
  pad_left: (value, length, char = ' ') =>
    text(value).padStart(Math.min(Number(length) || 0, MAX_RESULT_BYTES + 1), text(char) || ' '),
  pad_right: (value, length, char = ' ') =>
    text(value).padEnd(Math.min(Number(length) || 0, MAX_RESULT_BYTES + 1), text(char) || ' '),
  to_string: (value) => text(value),
  to_number: (value) => Number(value),
  to_boolean: (value) => value === true || value === 'true' || value === 1 || value === '1',
};

/**
 * liquidjs filters left out: those that evaluate expressions of their own (`*_exp`), and `sample`
 * (random: a fingerprint must be a function of the data).
 */
const REMOVED_FILTERS = /(_exp$|^sample$)/;

/** Byte size of a filter result, counted only as far as `limit` (an early exit for large values). */
function exceeds(value: unknown, limit: number): boolean {
  let total = 0;
  const visit = (v: unknown, depth: number): boolean => {
    if (typeof v === 'string') {
      total += v.length * 3 <= limit ? v.length : Buffer.byteLength(v, 'utf8');
    } else if (Array.isArray(v)) {
      total += v.length;
      if (total > limit) return true;
      for (const item of v) if (visit(item, depth + 1)) return true;
    } else if (v !== null && typeof v === 'object') {
      if (depth > 64) return true;
      for (const [key, item] of Object.entries(v)) {
        total += key.length + 1;
        if (visit(item, depth + 1)) return true;
      }
    } else total += 8;
    return total > limit;
  };
  return visit(value, 0);
}

type FilterHandler = (this: unknown, value: unknown, ...args: unknown[]) => unknown;
type FilterOptions = FilterHandler | { handler: FilterHandler; raw: boolean };

/**
 * Liquid over a token's `data`, limited to what a fingerprint or a search index needs:
 * `{{ ... }}` output with filters only (any tag is refused when parsed), at most
 * 1,000 characters, no variable but `data`, no file system. Every filter result and the output are at
 * most 4 KiB (refused, never truncated), and one render stops after 50 ms. Rendering runs in a worker
 * thread (expression-evaluator.ts), which bounds time and memory hard; this class is what both
 * threads share.
 */
export class ExpressionEngine {
  private readonly liquid: Liquid;
  private readonly parsed = new Map<string, Template[]>();
  /** Set by a guard before it throws, so that the reason survives liquidjs's error wrapping. */
  private failure: ExpressionFailure | undefined;
  private deadline = Infinity;

  /**
   * `timeLimitMs`: how long a render may take (EXPRESSION_TIME_LIMIT_MS; a test of the size limits gives
   * itself more, so that a loaded machine does not answer `too_slow` first).
   */
  constructor(private readonly timeLimitMs = EXPRESSION_TIME_LIMIT_MS) {
    this.liquid = new Liquid({
      strictVariables: true,
      strictFilters: true,
      ownPropertyOnly: true,
      // Templates are parsed from strings only: nothing can be read from a file system or included.
      relativeReference: false,
      root: [],
      partials: [],
      layouts: [],
      cache: false,
      parseLimit: MAX_TEMPLATE_LENGTH,
      renderLimit: this.timeLimitMs,
      memoryLimit: MEMORY_LIMIT,
    });
    const filters = this.liquid.filters as Record<string, FilterOptions>;
    for (const name of Object.keys(filters)) if (REMOVED_FILTERS.test(name)) delete filters[name];
    for (const [name, fn] of Object.entries(CUSTOM_FILTERS)) filters[name] = fn;
    for (const [name, options] of Object.entries(filters)) filters[name] = this.guarded(options);
    for (const tag of Object.keys(this.liquid.tags)) delete this.liquid.tags[tag];
  }

  /** Every filter checks the clock before it runs and the size of what it returns. */
  private guarded(options: FilterOptions): FilterOptions {
    const handler = typeof options === 'function' ? options : options.handler;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const engine = this;
    // A generator: liquidjs runs the inner filter (plain or itself a generator) on `yield` and sends back
    // its result, so one wrapper serves both kinds.
    const guard = function* (
      this: unknown,
      value: unknown,
      ...args: unknown[]
    ): Generator<unknown, unknown, unknown> {
      engine.checkClock();
      const result: unknown = yield handler.call(this, value, ...args);
      if (exceeds(result, MAX_RESULT_BYTES)) engine.fail('too_large');
      engine.checkClock();
      return result;
    };
    return typeof options === 'function' ? guard : { handler: guard, raw: options.raw };
  }

  private checkClock(): void {
    if (performance.now() > this.deadline) this.fail('too_slow');
  }

  private fail(reason: ExpressionFailure): never {
    this.failure = reason;
    throw new ExpressionError(reason);
  }

  /** Parses (and caches) a template; throws ExpressionError when it is not an allowed expression. */
  parse(template: string): Template[] {
    const cached = this.parsed.get(template);
    if (cached) return cached;
    if (template.length > MAX_TEMPLATE_LENGTH) throw new ExpressionError('too_long');
    if (template.includes('{%')) throw new ExpressionError('tag');
    let templates: Template[];
    try {
      templates = this.liquid.parse(template);
    } catch (error) {
      throw new ExpressionError(
        error instanceof Error && /^undefined filter/.test(error.message) ? 'unknown_filter' : 'syntax',
      );
    }
    // Only output and the literal text around it (liquidjs's HTML nodes) may remain.
    if (templates.some((node) => !(node instanceof Output) && node.constructor.name !== 'HTML'))
      throw new ExpressionError('tag');
    if (this.parsed.size >= CACHE_LIMIT) this.parsed.delete(this.parsed.keys().next().value!);
    this.parsed.set(template, templates);
    return templates;
  }

  /**
   * Renders a template over `data`, synchronously: call it where blocking is harmless (the worker
   * thread, unit tests). Stops at `deadline` (a `performance.now()` value) or after the time limit (50 ms).
   */
  render(template: string, data: unknown, deadline = performance.now() + this.timeLimitMs): string {
    const templates = this.parse(template);
    this.failure = undefined;
    this.deadline = deadline;
    let output: unknown;
    try {
      output = this.liquid.renderSync(templates, { data });
    } catch (error) {
      throw new ExpressionError(this.failure ?? reasonOf(error));
    } finally {
      this.deadline = Infinity;
    }
    const result = text(output);
    if (exceeds(result, MAX_RESULT_BYTES)) throw new ExpressionError('too_large');
    return result;
  }
}

/** Maps a liquidjs error to a reason by its kind, never passing on its message (which may quote data). */
function reasonOf(error: unknown): ExpressionFailure {
  if (error instanceof ExpressionError) return error.reason;
  if (error instanceof RangeError) return 'memory';
  if (!(error instanceof Error)) return 'invalid';
  if (error.name === 'UndefinedVariableError' || /^undefined variable/.test(error.message))
    return 'unknown_variable';
  if (/memory alloc limit/.test(error.message)) return 'memory';
  if (/render limit/.test(error.message)) return 'too_slow';
  return 'invalid';
}

/**
 * The default expressions (`{{ data.number }}`, `{{ data | stringify }}`, the bank's two fields) and
 * others of their shape: fields of `data` and literal text, answered without Liquid, with the output
 * Liquid gives. Returns undefined when the template or the data needs Liquid after all.
 */
const FAST_SEGMENT = /\{\{\s*data(?:\.([a-z_]+))?\s*(\|\s*(?:json_)?stringify\s*)?\}\}/g;

export function evaluateSimple(template: string, data: unknown): string | undefined {
  if (template.length > MAX_TEMPLATE_LENGTH) return undefined;
  let out = '';
  let at = 0;
  FAST_SEGMENT.lastIndex = 0;
  for (let match = FAST_SEGMENT.exec(template); match; match = FAST_SEGMENT.exec(template)) {
    const literal = template.slice(at, match.index);
    if (/[{}]/.test(literal)) return undefined;
    let value: unknown = data;
    if (match[1] !== undefined) {
      if (data === null || typeof data !== 'object' || Array.isArray(data) || !Object.hasOwn(data, match[1]))
        return undefined;
      value = (data as Record<string, unknown>)[match[1]];
    }
    let piece: string;
    if (match[2] !== undefined) {
      if (value === undefined) return undefined;
      piece = JSON.stringify(value);
      if (exceeds(piece, MAX_RESULT_BYTES)) throw new ExpressionError('too_large');
    } else if (typeof value === 'string') piece = value;
    else return undefined;
    out += literal + piece;
    at = FAST_SEGMENT.lastIndex;
  }
  if (at === 0) return undefined;
  const tail = template.slice(at);
  if (/[{}]/.test(tail)) return undefined;
  out += tail;
  if (exceeds(out, MAX_RESULT_BYTES)) throw new ExpressionError('too_large');
  return out;
}
