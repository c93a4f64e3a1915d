import { LiqeError, parse, SyntaxError as LiqeSyntaxError } from 'liqe';
import type { ExpressionToken, ParserAst, TagToken } from 'liqe';
import { ValidationException } from '../../../common/errors/domain.exception';
import type { TokenFilters } from './list-query';

/** At most this many `field:value` terms in one query (each becomes one bounded SQL test). */
export const MAX_QUERY_TERMS = 100;
/** At most this many nested AND / OR / NOT groups (operators of different kinds nest too). */
export const MAX_QUERY_DEPTH = 10;

/** Fields compared with one value. */
export type ValueField = 'id' | 'type' | 'fingerprint' | 'container' | 'data';
/** Fields compared with a date range. */
export type RangeField = 'created_at' | 'expires_at';

/** One bound of a range: `at` is an ISO 8601 date-time with an explicit zone (`Z` or `±hh:mm`). */
export interface RangeBound {
  at: string;
  inclusive: boolean;
}

/**
 * A search query, checked: what the SQL compiler (`queryPredicate` in token-search.repository.ts) takes.
 * `all` is the empty query. A `data` value is the plain search index value, digested before querying.
 */
export type SearchNode =
  | { kind: 'and' | 'or'; children: SearchNode[] }
  | { kind: 'not'; child: SearchNode }
  | { kind: 'all' }
  | { kind: 'term'; field: ValueField; value: string }
  | { kind: 'metadata'; name: string; value: string }
  | { kind: 'range'; field: RangeField; from?: RangeBound; to?: RangeBound };

const VALUE_FIELDS: readonly string[] = ['id', 'type', 'fingerprint', 'container', 'data'];
const RANGE_FIELDS: readonly string[] = ['created_at', 'expires_at'];
const FIELD_LIST = 'id, type, fingerprint, container, metadata.<name>, data, created_at, expires_at';
export const TOKEN_ID = /^[A-Za-z0-9_-]{1,400}$/;
const METADATA_NAME = /^[A-Za-z0-9_-]{1,128}$/;
/** A field name plain enough to repeat in an error message. */
const PRINTABLE_FIELD = /^[A-Za-z0-9_.$-]{1,140}$/;

/** A 400 naming the `query` field. Messages never repeat a value of the query (it may be token data). */
class QueryError extends Error {}
const fail = (message: string): never => {
  throw new QueryError(message);
};
const at = (offset: number): string => `at character ${offset + 1}`;

/**
 * liqe's grammar reads neither container paths (`/pci/high/` would be a regular expression, `/` and
 * `/pci/low` do not parse) nor dates in ranges (its range bounds are numbers). Before liqe parses the
 * query, such a value right after `container:`, `created_at:` or `expires_at:` (outside quotes) is
 * replaced by as many `x` as it has characters: liqe sees a plain word at the same place, so every
 * position it reports still points into the query as written, and the compiler reads the value from
 * there. Quoted strings are matched first so that nothing inside them is touched.
 */
const MASKABLE =
  /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|(?<=(?:^|[\s(])-?(?:created_at|expires_at):)[[{][^[\]{}"'()]*[\]}]|(?<=(?:^|[\s(])-?container:)\/[^\s()"']*/g;

function maskForLiqe(query: string): string {
  return query.replace(MASKABLE, (match) =>
    match[0] === '"' || match[0] === "'" ? match : 'x'.repeat(match.length),
  );
}

/** liqe's syntax errors, in terms of the query: a 1-based character offset where it has one. */
function syntaxMessage(error: unknown, query: string): string {
  if (error instanceof LiqeSyntaxError) return `syntax error ${at(error.offset)}`;
  if (error instanceof LiqeError) return 'the query is ambiguous: add parentheses or quotes';
  if (error instanceof Error && error.message === 'Found no parsings.')
    return `the query is incomplete ${at(query.length)} (its end): an unclosed parenthesis or quote, or an operator with nothing after it`;
  // Anything else liqe throws is about the input too (none is known): still a 400, without a position.
  return 'the query cannot be parsed';
}

/** An unquoted liqe literal as written: liqe turns `0042` into 42, `true` into true and so on. */
function literalText(expression: ExpressionToken & { type: 'LiteralExpression' }, query: string): string {
  if (expression.quoted) return expression.value;
  if (typeof expression.value === 'number') {
    const decimal = /-?\d+(?:\.\d+)?/y;
    decimal.lastIndex = expression.location.start;
    return decimal.exec(query)?.[0] ?? String(expression.value);
  }
  return query.slice(expression.location.start, expression.location.end);
}

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A range bound: `*` (open), an ISO 8601 date (midnight UTC) or date-time (`Z`, `±hh:mm`, `±hhmm`; none
 * means UTC). Returns the bound with its zone spelt out, or undefined when it is not one.
 */
function rangeDate(text: string): string | null | undefined {
  if (text === '*') return null;
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction, zone = 'Z'] = m;
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (
    day.getUTCFullYear() !== Number(y) ||
    day.getUTCMonth() !== Number(mo) - 1 ||
    day.getUTCDate() !== Number(d)
  )
    return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  let offset = 'Z';
  if (zone !== 'Z') {
    const [oh, om] = [zone.slice(1, 3), zone.slice(-2)];
    if (Number(oh) > 23 || Number(om) > 59) return undefined;
    offset = `${zone[0]}${oh}:${om}`;
  }
  return `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction ? `.${fraction}` : ''}${offset}`;
}

/** `[from TO to]` (inclusive) or `{from TO to}` (exclusive), either side of each kind, read as written. */
function range(field: RangeField, tag: TagToken, query: string): SearchNode {
  const { expression } = tag;
  const start = expression.location.start;
  const text = expression.type === 'EmptyExpression' ? '' : query.slice(start, expression.location.end);
  const m = /^([[{])\s*(\S+)\s+TO\s+(\S+?)\s*([\]}])$/.exec(text);
  if (!m) return fail(`${field} takes a range such as [2026-01-01 TO 2026-02-01] ${at(start)}`);
  const from = rangeDate(m[2]);
  const to = rangeDate(m[3]);
  if (from === undefined || to === undefined)
    return fail(`${field} range bounds are ISO 8601 dates or date-times, or * ${at(start)}`);
  if (from !== null && to !== null && Date.parse(from) > Date.parse(to))
    return fail(`${field} range starts after it ends ${at(start)}`);
  return {
    kind: 'range',
    field,
    ...(from !== null ? { from: { at: from, inclusive: m[1] === '[' } } : {}),
    ...(to !== null ? { to: { at: to, inclusive: m[4] === ']' } } : {}),
  };
}

function term(tag: TagToken, query: string): SearchNode {
  if (tag.field.type === 'ImplicitField')
    return fail(`a term needs a field ${at(tag.location.start)}: write field:value (fields: ${FIELD_LIST})`);
  const { name } = tag.field;
  const start = tag.field.location.start;
  const shown = PRINTABLE_FIELD.test(name) ? `${name} ` : '';
  if (tag.operator.operator !== ':')
    return fail(
      `only field:value is supported, not ${tag.operator.operator} ${at(tag.operator.location.start)}`,
    );
  if (RANGE_FIELDS.includes(name)) return range(name as RangeField, tag, query);
  const metadata = name.startsWith('metadata.') ? name.slice('metadata.'.length) : undefined;
  if (metadata === undefined && !VALUE_FIELDS.includes(name))
    return fail(`unknown search field ${shown}${at(start)} (fields: ${FIELD_LIST})`);
  if (metadata !== undefined && !METADATA_NAME.test(metadata))
    return fail(`a metadata field is metadata.<name>, the name 1 to 128 of A-Z a-z 0-9 _ - ${at(start)}`);
  const { expression } = tag;
  if (expression.type === 'EmptyExpression')
    return fail(`${shown}needs a value right after the colon ${at(expression.location.start)}`);
  if (expression.type === 'RangeExpression')
    return fail(`${shown}takes a value, not a range ${at(expression.location.start)}`);
  if (expression.type === 'RegexExpression')
    return fail(`regular expressions are not supported ${at(expression.location.start)}: quote the value`);
  const value = literalText(expression, query);
  if (!expression.quoted && /[*?]/.test(value))
    return fail(
      `wildcards are not supported ${at(expression.location.start)}: quote a value to match * or ?`,
    );
  if (value.includes('\u0000'))
    return fail(`a value contains the NUL character ${at(expression.location.start)}`);
  if (metadata !== undefined) return { kind: 'metadata', name: metadata, value };
  if (name === 'id' && !TOKEN_ID.test(value))
    return fail(`id values are 1 to 400 of A-Z a-z 0-9 _ - ${at(expression.location.start)}`);
  return { kind: 'term', field: name as ValueField, value };
}

/** liqe's tree as a SearchNode: chains of one operator flattened, every term checked and counted. */
function convert(ast: ParserAst, query: string, count: { terms: number }, top: boolean): SearchNode {
  switch (ast.type) {
    case 'EmptyExpression':
      return top ? { kind: 'all' } : fail(`empty parentheses ${at(ast.location.start - 1)}`);
    case 'ParenthesizedExpression':
      return convert(ast.expression, query, count, false);
    case 'UnaryOperator':
      return { kind: 'not', child: convert(ast.operand, query, count, false) };
    case 'LogicalExpression': {
      const kind = ast.operator.operator === 'OR' ? 'or' : 'and';
      const children = [ast.left, ast.right].flatMap((side) => {
        const child = convert(side, query, count, false);
        return child.kind === kind ? child.children : [child];
      });
      return { kind, children };
    }
    case 'Tag':
      if (++count.terms > MAX_QUERY_TERMS)
        return fail(
          `a query has at most ${MAX_QUERY_TERMS} terms; term ${count.terms} is ${at(ast.location.start)}`,
        );
      return term(ast, query);
  }
}

function depth(node: SearchNode): number {
  if (node.kind === 'and' || node.kind === 'or') return 1 + Math.max(...node.children.map(depth));
  if (node.kind === 'not') return 1 + depth(node.child);
  return 0;
}

/**
 * Parses Basis Theory's Lucene-style search language with liqe: `field:value` terms joined by spaces
 * (AND), `AND`, `OR`, `NOT` or `-`, and parentheses; values quoted (`"..."`, `'...'`) when they hold
 * spaces or other characters a plain word cannot. liqe applies operators left to right (`a OR b AND c`
 * is `(a OR b) AND c`). Fields: `id`, `type`, `fingerprint`, `container` (prefix of a container),
 * `metadata.<name>`, `data` (an exact search index value), and the ranges `created_at:[a TO b]` and
 * `expires_at:[a TO b]` (`{}` excludes a bound, `*` leaves it open). Anything else is a 400 naming
 * `query` and, where there is one, the 1-based character offset.
 */
export function parseTokenQuery(query: string): SearchNode {
  try {
    let ast: ParserAst;
    try {
      ast = parse(maskForLiqe(query));
    } catch (error) {
      return fail(syntaxMessage(error, query));
    }
    const node = convert(ast, query, { terms: 0 }, true);
    if (depth(node) > MAX_QUERY_DEPTH)
      fail(
        `a query nests at most ${MAX_QUERY_DEPTH} levels of AND, OR and NOT (add parentheses to group terms)`,
      );
    return node;
  } catch (error) {
    if (error instanceof QueryError) throw new ValidationException({ query: [error.message] });
    throw error;
  }
}

/** A list's filters (`GET /tokens`, `GET /v2/tokens`) as a query: every filter must match. */
export function filtersToQuery(filters: TokenFilters): SearchNode {
  const children: SearchNode[] = [
    ...filters.ids.map((value): SearchNode => ({ kind: 'term', field: 'id', value })),
    ...filters.types.map((value): SearchNode => ({ kind: 'term', field: 'type', value })),
    ...filters.fingerprints.map((value): SearchNode => ({ kind: 'term', field: 'fingerprint', value })),
    ...filters.containers.map((value): SearchNode => ({ kind: 'term', field: 'container', value })),
    ...filters.metadata.map(([name, value]): SearchNode => ({ kind: 'metadata', name, value })),
    ...filters.dataValues.map((value): SearchNode => ({ kind: 'term', field: 'data', value })),
    // `GET /tokens?id=a&id=b`: any of them.
    ...(filters.anyOfIds
      ? [
          {
            kind: 'or' as const,
            children: filters.anyOfIds.map((value): SearchNode => ({ kind: 'term', field: 'id', value })),
          },
        ]
      : []),
  ];
  return children.length ? { kind: 'and', children } : { kind: 'all' };
}

/** True when the query has a `data:` term (then the tenant's search index key is needed to digest it). */
export function hasDataTerm(node: SearchNode): boolean {
  if (node.kind === 'and' || node.kind === 'or') return node.children.some(hasDataTerm);
  if (node.kind === 'not') return hasDataTerm(node.child);
  return node.kind === 'term' && node.field === 'data';
}
