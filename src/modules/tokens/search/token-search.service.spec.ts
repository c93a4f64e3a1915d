import { randomUUID } from 'node:crypto';
import { StoppedClock } from '../../../../test/support/stopped-clock';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../../test/support/service-database';
import type { AccessRule } from '../../../common/auth/access-rule';
import type { Principal } from '../../../common/auth/principal';
import type { Metrics } from '../../../common/metrics/metrics';
import type { RateLimiter } from '../../../common/throttling/rate-limiter';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import type { AppConfig } from '../../../config/app-config';
import { CardEnumerationRepository } from '../enumeration/card-enumeration.repository';
import { CardEnumerationGuard } from '../enumeration/card-enumeration.service';
import { DEFAULT_LIMITS, ExpressionEvaluator } from '../expressions/expression-evaluator';
import type { TokenDto } from '../token-answer';
import { TokenReads } from '../token-reads';
import { PublicTokenizeLimit } from '../tokenize/public-tokenize-limit';
import { TokenizeService } from '../tokenize/tokenize.service';
import { TokensRepository } from '../tokens.repository';
import { emptyFilters, type TokenFilters, type TokenListQuery } from './list-query';
import { TokenSearchRepository } from './token-search.repository';
import { TokenSearchService } from './token-search.service';

/**
 * Lists and searches on the real SQL: a tenant's live tokens only, filtered and searched by the query
 * language (data terms through the search indexes), paged by offset or by cursor, each token shown as the
 * caller's deciding rule says, a reveal writing its audit rows.
 */
let db: ServiceDatabase;
const clock = new StoppedClock();
let service: TokenSearchService;
let tokenizer: TokenizeService;
let tenant: string;
let otherTenant: string;

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const ALL = ['token:create', 'token:read', 'token:search'];

beforeAll(async () => {
  db = await openServiceDatabase();
  const tokens = new TokensRepository(db.dataSource);
  const metrics = {
    tokensCreated: () => undefined,
    cardEnumerationRefused: () => undefined,
  } as unknown as Metrics;
  const config = { CARD_ENUMERATION_LIMIT: 10, PUBLIC_TOKENIZE_PER_MINUTE: 60 } as AppConfig;
  const guard = new CardEnumerationGuard(
    new CardEnumerationRepository(),
    db.work,
    metrics,
    config,
    db.tenantKeys,
    clock,
  );
  tokenizer = new TokenizeService(
    new ExpressionEvaluator({ ...DEFAULT_LIMITS, workers: 0 }),
    tokens,
    db.tenantKeys,
    clock,
    metrics,
    guard,
    db.work,
    new PublicTokenizeLimit({} as RateLimiter, config),
  );
  service = new TokenSearchService(
    new TokenSearchRepository(db.dataSource),
    db.tenantKeys,
    clock,
    new TokenReads(tokens, db.tenantKeys, guard, db.work),
  );
  tenant = await db.newTenant('mine');
  otherTenant = await db.newTenant('other');
  // A card in /pci/, an email with a search index, a bank-less plain token in /other/, a second-by-second
  // history (created_at one second apart) for the newest-first order.
  await create(tenant, {
    id: 'card_1',
    type: 'card',
    data: CARD,
    containers: ['/pci/high/'],
    metadata: { shop: 'a' },
  });
  await create(tenant, {
    id: 'email_1',
    type: 'token',
    data: 'jane@example.com',
    containers: ['/people/'],
    search_indexes: ['{{ data }}'],
    metadata: { shop: 'b' },
  });
  await create(tenant, {
    id: 'note_1',
    type: 'token',
    data: 'a note',
    containers: ['/other/'],
    metadata: { shop: 'a' },
  });
  await create(tenant, {
    id: 'card_2',
    type: 'card',
    data: { ...CARD, number: '5555555555554444' },
    containers: ['/pci/low/'],
  });
  // The other tenant holds a token of the same id and the same search value.
  await create(otherTenant, {
    id: 'email_1',
    type: 'token',
    data: 'jane@example.com',
    containers: ['/people/'],
    search_indexes: ['{{ data }}'],
  });
});
afterAll(() => db.close());

/** Newest first: the order of every list and search. */
const NEWEST_FIRST = ['card_2', 'note_1', 'email_1', 'card_1'];

async function create(tenantId: string, body: Record<string, unknown>): Promise<void> {
  clock.advance(1_000);
  await tokenizer.createOne({ actor: principalOf(tenantId, ALL) }, body);
}

const as = (permissions: string[], rules: AccessRule[] = [], tenantId = tenant): RequestOrigin => ({
  actor: { ...principalOf(tenantId, permissions), rules },
});
const listQuery = (
  filters: Partial<TokenFilters> = {},
  page: Partial<TokenListQuery> = {},
): TokenListQuery => ({
  filters: { ...emptyFilters(), ...filters },
  page: 1,
  size: 20,
  ...page,
});
/** The token of this id among those answered, as a plain object. */
const byId = (tokens: TokenDto[], id: string) =>
  tokens.find((t) => (t as { id: string }).id === id) as unknown as Record<string, unknown>;
const ids = (tokens: TokenDto[]) => tokens.map((t) => (t as { id: string }).id);
const revealRows = () =>
  db.rows<{ entity_id: string; actor_id: string; message: string }>(
    "SELECT entity_id, actor_id, message FROM audit_logs WHERE operation = 'reveal' ORDER BY pos",
  );

describe('list (v1)', () => {
  it("lists the tenant's tokens newest first, masked, with the page's totals", async () => {
    const page = await service.list(as(['token:read']), listQuery());
    expect(ids(page.data)).toEqual(NEWEST_FIRST);
    expect(page.pagination).toEqual({ total_items: 4, page_number: 1, page_size: 20, total_pages: 1 });
    const card = byId(page.data, 'card_1');
    expect(card).toMatchObject({ type: 'card', mask: { number: 'XXXXXXXXXXXX4242' } });
    expect(card.data).toBeUndefined();
    expect(JSON.stringify(page)).not.toContain('4242424242424242');
  });

  it("never shows another tenant's token, even of the same id", async () => {
    const mine = await service.list(as(['token:read']), listQuery({ anyOfIds: ['email_1'] }));
    const theirs = await service.list(as(['token:read'], [], otherTenant), listQuery());
    expect(ids(mine.data)).toEqual(['email_1']);
    expect(ids(theirs.data)).toEqual(['email_1']);
    expect((mine.data[0] as { metadata: unknown }).metadata).toEqual({ shop: 'b' });
    expect((theirs.data[0] as { metadata: unknown }).metadata).toBeUndefined();
  });

  it('filters by type, container (and below), metadata and ids, all at once', async () => {
    const found = async (filters: Partial<TokenFilters>) =>
      ids((await service.list(as(['token:read']), listQuery(filters))).data);
    expect(await found({ types: ['card'] })).toEqual(['card_2', 'card_1']);
    expect(await found({ containers: ['/pci/'] })).toEqual(['card_2', 'card_1']);
    expect(await found({ metadata: [['shop', 'a']] })).toEqual(['note_1', 'card_1']);
    expect(await found({ types: ['card'], metadata: [['shop', 'a']] })).toEqual(['card_1']);
    expect(await found({ anyOfIds: ['card_1', 'note_1', 'missing'] })).toEqual(['note_1', 'card_1']);
  });

  it('pages by number', async () => {
    const page = await service.list(as(['token:read']), listQuery({}, { page: 2, size: 3 }));
    expect(ids(page.data)).toEqual(['card_1']);
    expect(page.pagination).toEqual({ total_items: 4, page_number: 2, page_size: 3, total_pages: 2 });
  });

  it('leaves out what the rules do not grant, and tokens past their expiry', async () => {
    const pciOnly = as([], [{ priority: 1, container: '/pci/', permissions: ['token:read'] }]);
    expect(ids((await service.list(pciOnly, listQuery())).data)).toEqual(['card_2', 'card_1']);
    const id = `expiring_${randomUUID()}`;
    await tokenizer.createOne(
      { actor: principalOf(tenant, ALL) },
      { id, type: 'token', data: 'x', expires_at: new Date(clock.now().getTime() + 60_000).toISOString() },
    );
    expect(ids((await service.list(as(['token:read']), listQuery({ anyOfIds: [id] }))).data)).toEqual([id]);
    clock.advance(60_000);
    expect((await service.list(as(['token:read']), listQuery({ anyOfIds: [id] }))).data).toEqual([]);
  });
});

describe('search (v1)', () => {
  const search = (who: RequestOrigin, query: string, page = 1, size = 20) =>
    service.search(who, { query, page, size });

  it('finds by the query language: fields, AND, OR, NOT', async () => {
    const found = async (query: string) =>
      ids((await search(as(['token:search', 'token:read']), query)).data);
    expect(await found('type:card')).toEqual(['card_2', 'card_1']);
    expect(await found('metadata.shop:a AND NOT type:card')).toEqual(['note_1']);
    expect(await found('id:card_1 OR id:email_1')).toEqual(['email_1', 'card_1']);
    expect(await found('container:/pci/ AND -container:/pci/low/')).toEqual(['card_1']);
  });

  it("finds by data through the tenant's own search index digests, never another tenant's", async () => {
    const mine = await search(as(['token:search']), 'data:jane@example.com');
    expect(ids(mine.data)).toEqual(['email_1']);
    const theirs = await search(as(['token:search'], [], otherTenant), 'data:jane@example.com');
    expect(ids(theirs.data)).toEqual(['email_1']);
    expect(ids((await search(as(['token:search']), 'data:john@example.com')).data)).toEqual([]);
  });

  it('shows fingerprints only to a caller that may also read the tokens', async () => {
    const blind = await search(as(['token:search']), 'type:card');
    expect(blind.data.every((t) => (t as { fingerprint?: string }).fingerprint === undefined)).toBe(true);
    const reader = await search(as(['token:search', 'token:read']), 'type:card');
    expect(reader.data.every((t) => typeof (t as { fingerprint?: string }).fingerprint === 'string')).toBe(
      true,
    );
  });

  it('refuses a malformed query, naming the field and where it fails', async () => {
    await expect(
      Promise.resolve().then(() => search(as(['token:search']), 'type:(card')),
    ).rejects.toMatchObject({
      errors: { query: ['syntax error at character 6'] },
    });
  });
});

describe('cursor pages (v2)', () => {
  it('pages newest first by cursor, the last page without one', async () => {
    const who = as(['token:read']);
    const first = await service.listV2(who, listQuery({}, { size: 3 }));
    expect(ids(first.data)).toEqual(NEWEST_FIRST.slice(0, 3));
    expect(first.pagination.page_size).toBe(3);
    const second = await service.listV2(who, listQuery({}, { size: 3, start: first.pagination.next }));
    expect(ids(second.data)).toEqual(NEWEST_FIRST.slice(3));
    expect(second.pagination).toEqual({ page_size: 3 });
  });

  it('searches by cursor too', async () => {
    const who = as(['token:search']);
    const first = await service.searchV2(who, { query: 'type:card', size: 1 });
    const second = await service.searchV2(who, { query: 'type:card', size: 1, start: first.pagination.next });
    expect([...ids(first.data), ...ids(second.data)]).toEqual(['card_2', 'card_1']);
    expect(second.pagination.next).toBeUndefined();
  });

  it('refuses a cursor it did not make', async () => {
    await expect(
      service.listV2(as(['token:read']), listQuery({}, { start: 'bm90IGEgY3Vyc29y' })),
    ).rejects.toThrow();
  });
});

describe('reveal', () => {
  const revealer = (who: Principal = principalOf(tenant, [])): RequestOrigin => ({
    actor: {
      ...who,
      rules: [
        {
          priority: 1,
          container: '/people/',
          permissions: ['token:read', 'token:search'],
          transform: 'reveal',
        },
        { priority: 2, container: '/', permissions: ['token:read', 'token:search'], transform: 'mask' },
      ],
    },
  });

  it('shows the clear data of the tokens a reveal rule decides, and writes a reveal row for each of them only', async () => {
    const before = (await revealRows()).length;
    const who = revealer();
    const page = await service.list(who, listQuery());
    const email = byId(page.data, 'email_1');
    expect(email.data).toBe('jane@example.com');
    const card = byId(page.data, 'card_1');
    expect(card.data).toBeUndefined();
    const rows = (await revealRows()).slice(before);
    expect(rows).toEqual([
      { entity_id: 'email_1', actor_id: who.actor.applicationId, message: 'Token revealed (token)' },
    ]);
    expect(JSON.stringify(rows)).not.toContain('jane@example.com');
  });

  it('keeps the answer of a read that revealed out of its idempotency record', async () => {
    const withhold = jest.fn();
    const who = revealer();
    await service.search(
      { ...who, idempotency: { withhold } as unknown as RequestOrigin['idempotency'] },
      {
        query: 'container:/people/',
        page: 1,
        size: 20,
      },
    );
    expect(withhold).toHaveBeenCalledTimes(1);
  });

  it('writes no reveal row for a read that revealed nothing', async () => {
    const before = (await revealRows()).length;
    await service.search(revealer(), { query: 'type:card', page: 1, size: 20 });
    expect(await revealRows()).toHaveLength(before);
  });
});
