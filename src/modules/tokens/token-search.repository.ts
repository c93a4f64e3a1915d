import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Principal } from '../../common/auth/principal';
import { cursorTimeSql } from '../../common/pagination/cursor-pagination';
import { SqlParams } from '../../database/sql';
import { byPriority } from './token-access';
import type { TokenFilters } from './token-search';
import type { TokenRow } from './tokens.repository';

/** The filters of a list or search, with the search index values already digested. */
export interface TokenSearch extends Omit<TokenFilters, 'dataValues'> {
  digests: Buffer[];
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

const COLUMNS = `t.id, t.tenant_id, t.type, t.mask, t.card_brand, t.card_bin, t.fingerprint, t.fingerprint_expression, t.metadata,
  t.search_indexes, t.containers, t.expires_at, t.created_by, t.created_at, t.modified_by, t.modified_at`;

/**
 * The rule evaluator's decision (`decide` in token-access.ts) as SQL over the `tokens` table (alias
 * `t`), so that lists and searches filter and count exactly the tokens the caller may see: flat
 * permissions hold everywhere; otherwise the first matching rule by priority decides. Parameters are
 * appended to `params`.
 */
export function accessPredicate(who: Principal, permission: string, params: unknown[]): string {
  if (who.permissions.includes(permission)) return 'TRUE';
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const startsWith = (column: string, value: string): string =>
    `left(${column}, char_length(${param(value)}::text)) = $${params.length}::text`;
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
            ? `${column} = ${param(cond.value)}::text`
            : startsWith(column, cond.value);
        if (cond.attribute === 'container') return anyContainer(test);
        return test(cond.attribute === 'id' ? 't.id' : 't.type');
      });
      match = parts.length ? parts.join(' AND ') : 'TRUE';
    }
    return `WHEN ${match} THEN ${rule.permissions.includes(permission) ? 'TRUE' : 'FALSE'}`;
  });
  return branches.length ? `(CASE ${branches.join(' ')} ELSE FALSE END)` : 'FALSE';
}

/**
 * Lists and searches of tokens (offset and keyset pages), newest first. Hand-written SQL: the rule
 * predicate and the search index lookups do not fit a query builder. Joins the caller's transaction.
 */
@Injectable()
export class TokenSearchRepository {
  constructor(private readonly db: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async findOffsetPage(
    scope: SearchScope,
    search: TokenSearch,
    paging: { page: number; size: number },
  ): Promise<{ rows: TokenRow[]; total: number }> {
    const p = new SqlParams();
    const condition = this.where(scope, search, p);
    const [{ total }]: { total: number }[] = await this.db.tx.query(
      `SELECT count(*)::int AS total FROM tokens t WHERE ${condition}`,
      p.values,
    );
    const rows: TokenRow[] = await this.db.tx.query(
      `SELECT ${COLUMNS} FROM tokens t WHERE ${condition} ORDER BY t.created_at DESC, t.id DESC LIMIT ${p.add(paging.size)} OFFSET ${p.add((paging.page - 1) * paging.size)}`,
      p.values,
    );
    return { rows, total };
  }

  /** A page after the keyset `after` (from the start without it); `next` is set when more follow. */
  async findKeysetPage(
    scope: SearchScope,
    search: TokenSearch,
    paging: { after?: Keyset; size: number },
  ): Promise<{ rows: TokenRow[]; next?: Keyset }> {
    const p = new SqlParams();
    let condition = this.where(scope, search, p);
    if (paging.after) {
      condition += ` AND (t.created_at, t.id) < (${p.add(paging.after.createdAt)}::timestamptz, ${p.add(paging.after.id)}::text)`;
    }
    const found: (TokenRow & { cursor_at: string })[] = await this.db.tx.query(
      `SELECT ${COLUMNS}, ${cursorTimeSql('t.created_at')} AS cursor_at
         FROM tokens t WHERE ${condition} ORDER BY t.created_at DESC, t.id DESC LIMIT ${p.add(paging.size + 1)}`,
      p.values,
    );
    const page = found.slice(0, paging.size);
    const last = page[page.length - 1];
    return {
      rows: page.map(({ cursor_at: _cursor, ...row }) => row),
      ...(found.length > paging.size && last ? { next: { createdAt: last.cursor_at, id: last.id } } : {}),
    };
  }

  /** The WHERE clause shared by lists and searches: filters plus exactly the tokens the caller may see. */
  private where(scope: SearchScope, search: TokenSearch, p: SqlParams): string {
    const where = [
      `t.tenant_id = ${p.add(scope.who.tenantId)}`,
      `(t.expires_at IS NULL OR t.expires_at > ${p.add(scope.now)})`,
    ];
    for (const id of search.ids) where.push(`t.id = ${p.add(id)}`);
    if (search.anyOfIds) where.push(`t.id = ANY(${p.add(search.anyOfIds)}::text[])`);
    for (const type of search.types) where.push(`t.type = ${p.add(type)}`);
    for (const fingerprint of search.fingerprints) where.push(`t.fingerprint = ${p.add(fingerprint)}`);
    for (const container of search.containers) {
      where.push(
        `EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE left(c, char_length(${p.add(container)}::text)) = $${p.values.length}::text)`,
      );
    }
    for (const [name, value] of search.metadata)
      where.push(`t.metadata ->> ${p.add(name)} = ${p.add(value)}`);
    for (const digest of search.digests) {
      where.push(
        `EXISTS (SELECT 1 FROM token_search_indexes s WHERE s.tenant_id = t.tenant_id AND s.token_id = t.id AND s.digest = ${p.add(digest)})`,
      );
    }
    where.push(accessPredicate(scope.who, scope.permission, p.values));
    return where.join(' AND ');
  }
}
