import { Injectable } from '@nestjs/common';
import type { Principal } from '../../../common/auth/principal';
import { hmac, TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import { Clock } from '../../../common/jobs/clock';
import { CURSOR_TIME, decodeCursor, encodeCursor } from '../../../common/pagination/cursor-pagination';
import { offsetPage, OffsetPage } from '../../../common/pagination/offset-pagination';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { TOKEN_ID_PATTERN } from '../data/token-id';
import type { CursorTokenPage, TokenDto } from '../token-answer';
import { TokenReads } from '../token-reads';
import type { TokenListQuery } from './list-query';
import { filtersToQuery, hasDataTerm, parseTokenQuery, SearchNode } from './search-language';
import { Keyset, SearchScope, TokenSearch, TokenSearchRepository } from './token-search.repository';

/**
 * Lists and searches of tokens, v1 (offset pages) and v2 (cursor pages): the filters or the query compiled
 * to SQL with the caller's rules (`TokenSearchRepository`), each token shown as its rule says (`TokenReads`).
 */
@Injectable()
export class TokenSearchService {
  constructor(
    private readonly searches: TokenSearchRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly clock: Clock,
    private readonly reads: TokenReads,
  ) {}

  /** GET /tokens: `id`, `type`, `container`, `fingerprint`, `metadata.<name>`, `page`, `size`. */
  list(origin: RequestOrigin, query: TokenListQuery): Promise<OffsetPage<TokenDto>> {
    return this.findPage(origin, 'token:read', filtersToQuery(query.filters), query);
  }

  /** POST /tokens/search `{query, page?, size?}`: the query language of `parseTokenQuery`. */
  search(
    origin: RequestOrigin,
    body: { query: string; page: number; size: number },
  ): Promise<OffsetPage<TokenDto>> {
    return this.findPage(origin, 'token:search', parseTokenQuery(body.query), body);
  }

  /** GET /v2/tokens: `type`, `container`, `fingerprint`, `metadata` (a JSON object), `start`, `size`. */
  listV2(origin: RequestOrigin, query: TokenListQuery): Promise<CursorTokenPage> {
    return this.findCursorPage(origin, 'token:read', filtersToQuery(query.filters), query);
  }

  /** POST /v2/tokens/search `{query, start?, size?}`. */
  searchV2(
    origin: RequestOrigin,
    body: { query: string; start?: string; size: number },
  ): Promise<CursorTokenPage> {
    return this.findCursorPage(origin, 'token:search', parseTokenQuery(body.query), body);
  }

  /** The query as the repository takes it: `data:` values are digested with the tenant's search index key. */
  private async digested(who: Principal, query: SearchNode): Promise<TokenSearch> {
    if (!hasDataTerm(query))
      return {
        query,
        digest: () => {
          throw new Error('a query without data: terms has nothing to digest');
        },
      };
    const keys = await this.tenantKeys.keysFor(who.tenantId);
    return { query, digest: (value) => hmac(keys.searchIndex, value) };
  }

  private scope(who: Principal, permission: string): SearchScope {
    return { who, permission, now: this.clock.now() };
  }

  private async findPage(
    origin: RequestOrigin,
    permission: string,
    query: SearchNode,
    paging: { page: number; size: number },
  ): Promise<OffsetPage<TokenDto>> {
    const who = origin.actor;
    const search = await this.digested(who, query);
    const { rows, total } = await this.searches.findOffsetPage(this.scope(who, permission), search, paging);
    return offsetPage(await this.reads.present(origin, permission, rows), total, paging);
  }

  /**
   * Keyset pages newest first, for the v2 list and search (Basis Theory's cursor-paginated token
   * endpoints): `pagination.next` is the cursor of the next page, absent on the last one.
   */
  private async findCursorPage(
    origin: RequestOrigin,
    permission: string,
    query: SearchNode,
    paging: { start?: string; size: number },
  ): Promise<CursorTokenPage> {
    const who = origin.actor;
    const search = await this.digested(who, query);
    let after: Keyset | undefined;
    if (paging.start !== undefined) {
      const [createdAt, id] = decodeCursor(paging.start, [CURSOR_TIME, TOKEN_ID_PATTERN]);
      after = { createdAt, id };
    }
    const { rows, next } = await this.searches.findKeysetPage(this.scope(who, permission), search, {
      after,
      size: paging.size,
    });
    return {
      pagination: {
        page_size: paging.size,
        ...(next ? { next: encodeCursor([next.createdAt, next.id]) } : {}),
      },
      data: await this.reads.present(origin, permission, rows),
    };
  }
}
