import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Principal } from '../../../common/auth/principal';
import { cursorTimeSql } from '../../../common/pagination/cursor-pagination';
import { GenerateSql } from '../../../database/generate-sql';
import { SqlParams } from '../../../database/sql';
import type { Placeholders } from '../../../common/unit-of-work/write-batch';
import { columnsOf, queryRows } from '../../../database/table';
import { byPriority } from '../access/token-access';
import { normalizeTokenId } from '../data/token-id';
import type { SearchNode } from './search-language';
import { TokenEntity } from '../entities/token.entity';
import type { TokenRow } from '../tokens.repository';

/**
 * What a list or search looks for: the parsed query, and the digest of a `data:` value under the
 * tenant's search index key (the plain value never reaches SQL).
 */
export interface TokenSearch {
  query: SearchNode;
  digest: (value: string) => Buffer;
}

/** One statement and its positional parameters. */
export interface SqlStatement {
  sql: string;
  params: unknown[];
}

/** Whose tokens are looked at, under which permission, at what time (expired tokens never match). */
export interface SearchScope {
  who: Principal;
  permission: string;
  now: Date;
}

/** The keyset position of a token in newest-first order: `created_at` to the microsecond, and the id. */
export interface Keyset {
  createdAt: string;
  id: string;
}

/** Every column of a token but its sealed data. */
const COLUMNS = columnsOf(TokenEntity, 't', { except: ['data'] });

/**
 * The rule evaluator's decision (`decide` in token-access.ts) as SQL over the `tokens` table (alias
 * `t`), so that lists and searches filter and count exactly the tokens the caller may see: flat
 * permissions hold everywhere; otherwise the first matching rule by priority decides. A session sees a
 * token only where the application that authorized it would too, by the same walk over that
 * application's grants as they are now. Values go through `p` (a statement's placeholders).
 */
export function accessPredicate(
  who: Grants & Pick<Principal, 'authorizer'>,
  permission: string,
  p: Placeholders,
): string {
  // Decided before any parameter is added: a statement must use every parameter it sends.
  if (grantsNothing(who, permission) || (who.authorizer && grantsNothing(who.authorizer, permission)))
    return 'FALSE';
  const own = grantsPredicate(who, permission, p);
  if (!who.authorizer) return own;
  const authorizer = grantsPredicate(who.authorizer, permission, p);
  if (authorizer === 'TRUE') return own;
  return own === 'TRUE' ? authorizer : `(${own} AND ${authorizer})`;
}

type Grants = Pick<Principal, 'permissions' | 'rules'>;

/** True when these grants hold `permission` on no token at all (no flat grant and no rule). */
const grantsNothing = (who: Grants, permission: string): boolean =>
  !who.permissions.includes(permission) && !who.rules.length;

/** One holder's grants as a predicate: TRUE when held flat, else a CASE by rule priority. */
function grantsPredicate(who: Grants, permission: string, p: Placeholders): string {
  if (who.permissions.includes(permission)) return 'TRUE';
  const startsWith = (column: string, value: string): string => {
    const prefix = p.add(value);
    return `left(${column}, char_length(${prefix}::text)) = ${prefix}::text`;
  };
  const anyContainer = (test: (c: string) => string): string =>
    `EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE ${test('c')})`;
  const branches = byPriority(who.rules).map((rule) => {
    let match: string;
    if (rule.container !== undefined) {
      const container = rule.container;
      match = anyContainer((c) => startsWith(c, container));
    } else {
      const parts = (rule.conditions ?? []).map((cond) => {
        const test = (column: string): string =>
          cond.operator === 'equals'
            ? `${column} = ${p.add(cond.value)}::text`
            : startsWith(column, cond.value);
        if (cond.attribute === 'container') return anyContainer(test);
        return test(cond.attribute === 'id' ? 't.id::text' : 't.type');
      });
      match = parts.length ? parts.join(' AND ') : 'TRUE';
    }
    return `WHEN ${match} THEN ${rule.permissions.includes(permission) ? 'TRUE' : 'FALSE'}`;
  });
  return branches.length ? `(CASE ${branches.join(' ')} ELSE FALSE END)` : 'FALSE';
}

/**
 * A search query as one SQL predicate over `tokens t`, every value a parameter. NOT is pushed down to
 * the terms (De Morgan), and each term has a negated form that is true where the term is false, NULL
 * columns included (`NOT metadata.k:v` finds tokens without metadata): no term is ever unknown, so
 * the predicate means exactly what the query says. Each term keeps the meaning it has in lists:
 * `container:` is a prefix of one of the token's containers, `metadata.<name>:` an exact string value
 * (`@>`, served by the metadata GIN index), `data:` a search index digest.
 */
export function queryPredicate(search: TokenSearch, p: SqlParams): string {
  const sql = (node: SearchNode, negated: boolean): string => {
    switch (node.kind) {
      case 'and':
      case 'or': {
        const joiner = (node.kind === 'and') !== negated ? ' AND ' : ' OR ';
        return `(${node.children.map((child) => sql(child, negated)).join(joiner)})`;
      }
      case 'not':
        return sql(node.child, !negated);
      case 'all':
        return negated ? 'FALSE' : 'TRUE';
      case 'metadata': {
        const test = `t.metadata @> ${p.add(JSON.stringify({ [node.name]: node.value }))}::jsonb`;
        return negated ? `NOT COALESCE(${test}, FALSE)` : test;
      }
      case 'range': {
        const column = `t.${node.field}`;
        const tests = [
          ...(node.from
            ? [`${column} ${node.from.inclusive ? '>=' : '>'} ${p.add(node.from.at)}::timestamptz`]
            : []),
          ...(node.to
            ? [`${column} ${node.to.inclusive ? '<=' : '<'} ${p.add(node.to.at)}::timestamptz`]
            : []),
        ];
        // `[* TO *]`: any value (created_at always has one; expires_at only on tokens that expire).
        const test = tests.length ? `(${tests.join(' AND ')})` : `${column} IS NOT NULL`;
        return negated ? `NOT COALESCE(${test}, FALSE)` : test;
      }
      case 'term': {
        const not = negated ? 'NOT ' : '';
        switch (node.field) {
          case 'id':
            // A uuid is stored lower-case (see normalizeTokenId); other ids are exact.
            return `t.id ${negated ? '<>' : '='} ${p.add(normalizeTokenId(node.value))}`;
          case 'type':
            return `t.${node.field} ${negated ? '<>' : '='} ${p.add(node.value)}`;
          case 'fingerprint': {
            // A fingerprint not counted yet by the card enumeration guard matches no fingerprint term (a
            // match would tell it as a read would): found by fingerprint once a read has counted it.
            const test = `(t.fingerprint = ${p.add(node.value)} AND t.fingerprint_groups IS NULL)`;
            return negated ? `NOT ${test}` : test;
          }
          case 'container':
            return `${not}EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE left(c, char_length(${p.add(node.value)}::text)) = $${p.values.length}::text)`;
          case 'data':
            return `${not}EXISTS (SELECT 1 FROM token_search_indexes s WHERE s.tenant_id = t.tenant_id AND s.token_id = t.id AND s.digest = ${p.add(search.digest(node.value))})`;
        }
      }
    }
  };
  return sql(search.query, false);
}

/**
 * The WHERE clause shared by lists and searches: the tenant, live tokens only, the query, and (a
 * separate AND around the whole query, so that no NOT in it can reach them) exactly the tokens the
 * caller may see.
 */
function whereSql(scope: SearchScope, search: TokenSearch, p: SqlParams): string {
  return [
    `t.tenant_id = ${p.add(scope.who.tenantId)}`,
    `(t.expires_at IS NULL OR t.expires_at > ${p.add(scope.now)})`,
    `(${queryPredicate(search, p)})`,
    accessPredicate(scope.who, scope.permission, p),
  ].join(' AND ');
}

/** The count and the rows of an offset page, newest first. */
export function offsetPageSql(
  scope: SearchScope,
  search: TokenSearch,
  paging: { page: number; size: number },
): { count: SqlStatement; page: SqlStatement } {
  const p = new SqlParams();
  const condition = whereSql(scope, search, p);
  const count = {
    sql: `SELECT count(*)::int AS total FROM tokens t WHERE ${condition}`,
    params: [...p.values],
  };
  const page = {
    sql: `SELECT ${COLUMNS} FROM tokens t WHERE ${condition} ORDER BY t.created_at DESC, t.id DESC LIMIT ${p.add(paging.size)} OFFSET ${p.add((paging.page - 1) * paging.size)}`,
    params: p.values,
  };
  return { count, page };
}

/** One more row than a keyset page after `after` (from the start without it), newest first. */
export function keysetPageSql(
  scope: SearchScope,
  search: TokenSearch,
  paging: { after?: Keyset; size: number },
): SqlStatement {
  const p = new SqlParams();
  let condition = whereSql(scope, search, p);
  if (paging.after) {
    condition += ` AND (t.created_at, t.id) < (${p.add(paging.after.createdAt)}::timestamptz, ${p.add(paging.after.id)}::text)`;
  }
  return {
    sql: `SELECT ${COLUMNS}, ${cursorTimeSql('t.created_at')} AS cursor_at
         FROM tokens t WHERE ${condition} ORDER BY t.created_at DESC, t.id DESC LIMIT ${p.add(paging.size + 1)}`,
    params: p.values,
  };
}

/** Example arguments of the SQL snapshots: a caller with one rule, a query with a `data:` term. */
const EXAMPLE_SCOPE: SearchScope = {
  who: {
    tenantId: '00000000-0000-4000-8000-000000000001',
    applicationId: '00000000-0000-4000-8000-000000000003',
    applicationType: 'private',
    keyKind: 'private',
    keyId: '00000000-0000-4000-8000-000000000004',
    authorized: true,
    permissions: [],
    rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'] }],
  },
  permission: 'token:read',
  now: new Date('2026-01-01T00:00:00Z'),
};
const EXAMPLE_SEARCH: TokenSearch = {
  query: {
    kind: 'and',
    children: [
      { kind: 'term', field: 'type', value: 'card' },
      { kind: 'term', field: 'data', value: '4242' },
    ],
  },
  digest: () => Buffer.alloc(32, 5),
};

/**
 * Lists and searches of tokens (offset and keyset pages), newest first. Hand-written SQL: the rule
 * predicate and the search query do not fit a query builder. Reads outside any change (the pool).
 */
@Injectable()
export class TokenSearchRepository {
  constructor(private readonly dataSource: DataSource) {}

  @GenerateSql({
    answers: [[{ total: 0 }]],
    params: [EXAMPLE_SCOPE, EXAMPLE_SEARCH, { page: 2, size: 20 }],
  })
  async findOffsetPage(
    scope: SearchScope,
    search: TokenSearch,
    paging: { page: number; size: number },
  ): Promise<{ rows: TokenRow[]; total: number }> {
    const { count, page } = offsetPageSql(scope, search, paging);
    const [{ total }] = await queryRows<{ total: number }>(this.dataSource, count.sql, count.params);
    const rows = await queryRows<TokenRow>(this.dataSource, page.sql, page.params);
    return { rows, total };
  }

  /** A page after the keyset `after` (from the start without it); `next` is set when more follow. */
  @GenerateSql({
    params: [
      EXAMPLE_SCOPE,
      EXAMPLE_SEARCH,
      {
        after: { createdAt: '2026-01-01T00:00:00.000001Z', id: '00000000-0000-4000-8000-000000000002' },
        size: 20,
      },
    ],
  })
  async findKeysetPage(
    scope: SearchScope,
    search: TokenSearch,
    paging: { after?: Keyset; size: number },
  ): Promise<{ rows: TokenRow[]; next?: Keyset }> {
    const { sql, params } = keysetPageSql(scope, search, paging);
    const found = await queryRows<TokenRow & { cursor_at: string }>(this.dataSource, sql, params);
    const page = found.slice(0, paging.size);
    const last = page[page.length - 1];
    return {
      rows: page.map(({ cursor_at: _cursor, ...row }) => row),
      ...(found.length > paging.size && last ? { next: { createdAt: last.cursor_at, id: last.id } } : {}),
    };
  }
}
