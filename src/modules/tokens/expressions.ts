import { Liquid, LiquidError, Template } from 'liquidjs';

const MAX_TEMPLATE_LENGTH = 1_000;
const MAX_OUTPUT_LENGTH = 4_096;
const CACHE_LIMIT = 1_000;

export class ExpressionError extends Error {}

const text = (value: unknown): string =>
  value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);

/** Templates may read nothing but the value they are given: no file system at all. */
const noFiles = {
  exists: () => Promise.resolve(false),
  existsSync: () => false,
  readFile: () => Promise.reject(new Error('templates cannot read files')),
  readFileSync: () => {
    throw new Error('templates cannot read files');
  },
  resolve: (_root: string, file: string) => file,
};

/**
 * Liquid (liquidjs) over a token's `data`, for fingerprints and search indexes: the standard filters plus
 * Basis Theory's (`stringify`, `last4`, `reveal_last`, `card_bin`, `pad_left`, `pad_right`, `to_string`,
 * `to_number`, `to_boolean`). Strict about unknown variables and filters, bounded in size and time.
 */
const SINGLE_FIELD = /^\{\{\s*data\.([a-z_]+)\s*\}\}$/;

export class ExpressionEngine {
  private readonly liquid = new Liquid({
    strictVariables: true,
    strictFilters: true,
    ownPropertyOnly: true,
    fs: noFiles,
    relativeReference: false,
    root: [],
    partials: [],
    layouts: [],
    cache: false,
    parseLimit: MAX_TEMPLATE_LENGTH,
    renderLimit: 200,
    memoryLimit: 1_000_000,
  });

  private readonly parsed = new Map<string, Template[]>();

  constructor() {
    const filters: Record<string, (value: unknown, ...args: unknown[]) => unknown> = {
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
        text(value).padStart(Math.min(Number(length) || 0, MAX_OUTPUT_LENGTH + 1), text(char) || ' '),
      pad_right: (value, length, char = ' ') =>
        text(value).padEnd(Math.min(Number(length) || 0, MAX_OUTPUT_LENGTH + 1), text(char) || ' '),
      to_string: (value) => text(value),
      to_number: (value) => Number(value),
      to_boolean: (value) => value === true || value === 'true' || value === 1 || value === '1',
    };
    for (const [name, fn] of Object.entries(filters)) this.liquid.registerFilter(name, fn);
    for (const tag of ['include', 'render', 'layout', 'block']) {
      this.liquid.registerTag(tag, {
        parse() {
          throw new Error(`the ${tag} tag is not allowed`);
        },
        render() {
          return '';
        },
      });
    }
  }

  /** Parses (and caches) a template; throws ExpressionError on a syntax error. */
  parse(template: string): Template[] {
    const cached = this.parsed.get(template);
    if (cached) return cached;
    if (template.length > MAX_TEMPLATE_LENGTH)
      throw new ExpressionError(`expression is longer than ${MAX_TEMPLATE_LENGTH} characters`);
    let templates: Template[];
    try {
      templates = this.liquid.parse(template);
    } catch (error) {
      throw new ExpressionError(`invalid expression: ${describe(error)}`);
    }
    if (this.parsed.size >= CACHE_LIMIT) this.parsed.delete(this.parsed.keys().next().value!);
    this.parsed.set(template, templates);
    return templates;
  }

  /** Renders a template over `data`; throws ExpressionError for unknown variables or oversize output. */
  evaluate(template: string, data: unknown): string {
    // The default fingerprints (`{{ data.number }}`) read one string field: answered without Liquid, with
    // the same output Liquid gives.
    const field = SINGLE_FIELD.exec(template)?.[1];
    if (field !== undefined && data !== null && typeof data === 'object' && Object.hasOwn(data, field)) {
      const value = (data as Record<string, unknown>)[field];
      if (typeof value === 'string' && value.length <= MAX_OUTPUT_LENGTH) return value;
    }
    const templates = this.parse(template);
    let output: unknown;
    try {
      output = this.liquid.renderSync(templates, { data });
    } catch (error) {
      throw new ExpressionError(`expression cannot be evaluated: ${describe(error)}`);
    }
    const result = text(output);
    if (result.length > MAX_OUTPUT_LENGTH)
      throw new ExpressionError(`expression output exceeds ${MAX_OUTPUT_LENGTH} characters`);
    return result;
  }
}

/** The first line of a liquidjs message (its excerpt shows the template, never the data), or a generic text. */
function describe(error: unknown): string {
  if (error instanceof LiquidError) {
    const first = error.message.split('\n')[0];
    return first.replace(/, line:\d+, col:\d+$/, '');
  }
  return error instanceof Error ? error.message.split('\n')[0] : 'unknown error';
}
