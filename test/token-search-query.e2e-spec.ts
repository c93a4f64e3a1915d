import fc from 'fast-check';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from './support/app';

/**
 * The search language end to end: random query trees, written out as Basis Theory's Lucene-style
 * strings, sent to POST /tokens/search (offset pages) and POST /v2/tokens/search (cursor pages), and
 * compared with the same tree evaluated in plain JavaScript over the tokens the test created. A key
 * whose rules hide some containers gets exactly the brute-force answer minus what it may not see:
 * no NOT in a query reaches past the access rules.
 */

const CARDS = [
  '4242424242424242',
  '4000056655665556',
  '5555555555554444',
  '2223003122003222',
  '6011111111111117',
];
const BANKS = [
  { routing_number: '021000021', account_number: '123456789' },
  { routing_number: '011000015', account_number: '000123456789' },
];
/** Values of `token` tokens, each also its search index (`{{ data }}`). */
const STRINGS = ['alpha', 'beta gamma', '0042', 'true', 'AND', 'x:y', 'say "hi"'];
const CONTAINER_SETS = [
  ['/general/high/'],
  ['/general/low/'],
  ['/pci/high/'],
  ['/pci/low/', '/general/low/'],
  ['/bank/high/'],
  ['/general/high/', '/bank/low/'],
];
const METADATA: Record<string, string[]> = {
  customer_id: ['c1', 'c 2', 'c"3'],
  plan: ['gold', 'silver'],
  note: ['AND', 'x:y'],
};
const DAY = 86_400_000;
/** Tokens are dated from here on, one every 19 hours (and two pairs share a time: the keyset breaks ties by id). */
const BASE = Date.UTC(2025, 2, 1);
const EXPIRY_BASE = Date.UTC(2031, 0, 1);

interface Known {
  id: string;
  type: string;
  fingerprint: string;
  containers: string[];
  metadata: Record<string, string>;
  createdAt: number;
  expiresAt?: number;
  indexValues: string[];
}

type Bound = { ms: number; inclusive: boolean; format: 'iso' | 'offset' | 'date' };
type Leaf =
  | { k: 'id' | 'type' | 'fingerprint' | 'container' | 'data'; v: string; quote: boolean }
  | { k: 'meta'; name: string; v: string; quote: boolean }
  | { k: 'range'; field: 'created_at' | 'expires_at'; from?: Bound; to?: Bound };
type Q = Leaf | { k: 'and' | 'or'; c: Q[]; implicit: boolean } | { k: 'not'; c: Q; dash: boolean };

/** A value as a query writes it: plain where liqe reads it as one word, else a JSON-style quoted string. */
function valueText(value: string, quote: boolean): string {
  const plain =
    (/^[A-Za-z_][\w.-]*$/.test(value) && !['AND', 'OR', 'NOT'].includes(value)) ||
    /^\d+$/.test(value) ||
    /^\/[\w/-]*$/.test(value);
  return quote || !plain ? JSON.stringify(value) : value;
}

function boundText(bound: Bound | undefined): string {
  if (!bound) return '*';
  if (bound.format === 'date') return new Date(bound.ms).toISOString().slice(0, 10);
  if (bound.format === 'iso') return new Date(bound.ms).toISOString();
  return `${new Date(bound.ms + 2 * 3_600_000).toISOString().slice(0, 19)}+02:00`;
}

function serialise(q: Q): string {
  switch (q.k) {
    case 'and':
    case 'or':
      return q.c
        .map((child) => (child.k === 'and' || child.k === 'or' ? `(${serialise(child)})` : serialise(child)))
        .join(q.k === 'or' ? ' OR ' : q.implicit ? ' ' : ' AND ');
    case 'not': {
      const leaf = !['and', 'or', 'not'].includes(q.c.k);
      if (leaf && q.dash) return `-${serialise(q.c)}`;
      return leaf ? `NOT ${serialise(q.c)}` : `NOT (${serialise(q.c)})`;
    }
    case 'meta':
      return `metadata.${q.name}:${valueText(q.v, q.quote)}`;
    case 'range': {
      const open = q.from && !q.from.inclusive ? '{' : '[';
      const close = q.to && !q.to.inclusive ? '}' : ']';
      return `${q.field}:${open}${boundText(q.from)} TO ${boundText(q.to)}${close}`;
    }
    default:
      return `${q.k}:${valueText(q.v, q.quote)}`;
  }
}

function matches(q: Q, token: Known): boolean {
  switch (q.k) {
    case 'and':
      return q.c.every((child) => matches(child, token));
    case 'or':
      return q.c.some((child) => matches(child, token));
    case 'not':
      return !matches(q.c, token);
    case 'id':
      return token.id === q.v;
    case 'type':
      return token.type === q.v;
    case 'fingerprint':
      return token.fingerprint === q.v;
    case 'container':
      return token.containers.some((c) => c.startsWith(q.v));
    case 'data':
      return token.indexValues.includes(q.v);
    case 'meta':
      return token.metadata[q.name] === q.v;
    case 'range': {
      const at = q.field === 'created_at' ? token.createdAt : token.expiresAt;
      if (at === undefined) return false;
      // A date-only bound is midnight UTC of that day.
      const ms = (b: Bound) => (b.format === 'date' ? Math.floor(b.ms / DAY) * DAY : b.ms);
      if (q.from && (q.from.inclusive ? at < ms(q.from) : at <= ms(q.from))) return false;
      if (q.to && (q.to.inclusive ? at > ms(q.to) : at >= ms(q.to))) return false;
      return true;
    }
  }
}

describe('token search: random queries against a brute-force filter', () => {
  let t: TestApp;
  let owner: string;
  let restricted: string;
  const tokens: Known[] = [];

  beforeAll(async () => {
    t = await startApp();
    const tenant = await newTenant(t, 'search property tenant');
    owner = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:search'],
      })
    ).key;
    // /pci/ tokens may be read but not searched; /general/ ones searched; /bank/-only ones are unseen.
    restricted = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        rules: [
          { priority: 1, container: '/pci/', permissions: ['token:read'] },
          { priority: 2, container: '/general/', permissions: ['token:read', 'token:search'] },
        ],
      })
    ).key;

    const elements: Record<string, unknown>[] = [];
    const expected: Omit<Known, 'id' | 'fingerprint' | 'createdAt'>[] = [];
    for (let i = 0; i < 36; i++) {
      const kind = i % 3;
      const metadata: Record<string, string> = {};
      for (const [j, [name, values]] of Object.entries(METADATA).entries())
        if ((i + j) % (j + 2) !== 0) metadata[name] = values[(i * 7 + j) % values.length];
      const containers = CONTAINER_SETS[(i * 5) % CONTAINER_SETS.length];
      const expiresAt = i % 4 === 0 ? EXPIRY_BASE + (i % 12) * DAY + (i % 5) * 3_600_000 : undefined;
      const common = {
        containers,
        ...(Object.keys(metadata).length ? { metadata } : {}),
        ...(expiresAt !== undefined ? { expires_at: new Date(expiresAt).toISOString() } : {}),
      };
      if (kind === 0) {
        const value = STRINGS[i % STRINGS.length];
        const indexed = i % 6 !== 3;
        elements.push({
          type: 'token',
          data: value,
          ...(indexed ? { search_indexes: ['{{ data }}'] } : {}),
          ...common,
        });
        expected.push({
          type: 'token',
          containers,
          metadata,
          expiresAt,
          indexValues: indexed ? [value] : [],
        });
      } else if (kind === 1) {
        const number = CARDS[i % CARDS.length];
        const data = { number, expiration_month: 1 + (i % 12), expiration_year: 2031 };
        elements.push({ type: 'card', data, search_indexes: ['{{ data.number | last4 }}'], ...common });
        expected.push({ type: 'card', containers, metadata, expiresAt, indexValues: [number.slice(-4)] });
      } else {
        elements.push({ type: 'bank', data: BANKS[i % BANKS.length], ...common });
        expected.push({ type: 'bank', containers, metadata, expiresAt, indexValues: [] });
      }
    }
    // Once more if refused: under a loaded CI machine this batch was refused once with a 400 (not
    // reproduced since); a second refusal fails with the answer, which says why.
    const send = () => request(t.http).post('/tokenize').set('BT-API-KEY', owner).send(elements);
    let created = await send();
    if (created.status !== 201) {
      process.stdout.write(`token search setup: tokenize answered ${created.status} ${created.text}\n`);
      created = await send();
    }
    expect({ status: created.status, body: created.status === 201 ? undefined : created.text }).toEqual({
      status: 201,
      body: undefined,
    });
    const db = t.app.get(DataSource);
    for (const [i, body] of (created.body as { id: string; fingerprint: string }[]).entries()) {
      // Spread over two months; tokens 10 and 11, and 20 and 21, were created at the same microsecond.
      const createdAt = BASE + (i === 11 || i === 21 ? i - 1 : i) * 19 * 3_600_000;
      await db.query('UPDATE tokens SET created_at = $1 WHERE id = $2', [new Date(createdAt), body.id]);
      tokens.push({ ...expected[i], id: body.id, fingerprint: body.fingerprint, createdAt });
    }
  });
  afterAll(() => t.close());

  const visibleToRestricted = (token: Known): boolean =>
    !token.containers.some((c) => c.startsWith('/pci/')) &&
    token.containers.some((c) => c.startsWith('/general/'));

  /** Every id the query finds, through all v1 pages of `size`; checks the totals on the way. */
  async function searchV1(key: string, query: string, size: number): Promise<string[]> {
    const ids: string[] = [];
    for (let page = 1; ; page++) {
      const res = await request(t.http)
        .post('/tokens/search')
        .set('BT-API-KEY', key)
        .send({ query, page, size });
      if (res.status !== 200) throw new Error(`${query}: ${res.status} ${JSON.stringify(res.body)}`);
      ids.push(...res.body.data.map((x: { id: string }) => x.id));
      const { total_items: total, total_pages: pages } = res.body.pagination;
      if (page >= pages || res.body.data.length === 0) {
        expect(ids).toHaveLength(total);
        return ids;
      }
    }
  }

  /** Every id the query finds, following `pagination.next` of v2 pages of `size`. */
  async function searchV2(key: string, query: string, size: number): Promise<string[]> {
    const ids: string[] = [];
    let start: string | undefined;
    do {
      const res = await request(t.http)
        .post('/v2/tokens/search')
        .set('BT-API-KEY', key)
        .send({ query, size, ...(start ? { start } : {}) });
      if (res.status !== 200) throw new Error(`${query}: ${res.status} ${JSON.stringify(res.body)}`);
      ids.push(...res.body.data.map((x: { id: string }) => x.id));
      start = res.body.pagination.next;
    } while (start);
    return ids;
  }

  it('the tokens are there, dated as set', () => {
    expect(tokens).toHaveLength(36);
    expect(new Set(tokens.map((x) => x.fingerprint)).size).toBeGreaterThan(5);
  });

  it('finds exactly the tokens a brute-force filter finds, v1 and v2, for random queries', async () => {
    const bound = (times: () => number[]) =>
      fc.record({
        ms: fc.oneof(
          fc.constantFrom(...times()),
          fc
            .integer({ min: Math.min(...times()) - DAY, max: Math.max(...times()) + DAY })
            .map((ms) => ms - (ms % 1000)),
        ),
        inclusive: fc.boolean(),
        format: fc.constantFrom('iso' as const, 'offset' as const, 'date' as const),
      });
    const createdTimes = () => tokens.map((x) => x.createdAt);
    const expiryTimes = () => tokens.flatMap((x) => (x.expiresAt === undefined ? [] : [x.expiresAt]));
    const dayOf = (b: Bound) => (b.format === 'date' ? Math.floor(b.ms / DAY) * DAY : b.ms);
    const range = (field: 'created_at' | 'expires_at') =>
      fc
        .record(
          {
            from: bound(field === 'created_at' ? createdTimes : expiryTimes),
            to: bound(field === 'created_at' ? createdTimes : expiryTimes),
          },
          { requiredKeys: [] },
        )
        .map(({ from, to }): Leaf => {
          // The service refuses a range that starts after it ends: order the bounds.
          if (from && to && dayOf(from) > dayOf(to)) return { k: 'range', field, from: to, to: from };
          return { k: 'range', field, from, to };
        });
    const valued = (k: 'id' | 'type' | 'fingerprint' | 'container' | 'data', values: () => string[]) =>
      fc.record({
        k: fc.constant(k),
        v: fc.constantFrom(...values()),
        quote: fc.boolean(),
      }) as fc.Arbitrary<Leaf>;
    const leaf: fc.Arbitrary<Leaf> = fc.oneof(
      valued('id', () => [...tokens.map((x) => x.id), '00000000-0000-4000-8000-000000000000', 'tok_unknown']),
      valued('type', () => ['card', 'bank', 'token', 'other']),
      valued('fingerprint', () => [...new Set(tokens.map((x) => x.fingerprint)), 'nofingerprint']),
      valued('container', () => [
        '/',
        '/pci/',
        '/pci/high/',
        '/general/',
        '/general/low/',
        '/bank/',
        '/pci/hi',
        '/none/',
      ]),
      valued('data', () => [...STRINGS, '4242', '4444', '5556', 'zzz']),
      fc.record({
        k: fc.constant('meta' as const),
        name: fc.constantFrom(...Object.keys(METADATA), 'absent'),
        v: fc.constantFrom(...Object.values(METADATA).flat(), 'none'),
        quote: fc.boolean(),
      }),
      range('created_at'),
      range('expires_at'),
    );
    const { q } = fc.letrec<{ q: Q; group: Q; not: Q }>((tie) => ({
      q: fc.oneof({ maxDepth: 4, depthIdentifier: 'q' }, leaf, tie('group'), tie('not')),
      group: fc.record({
        k: fc.constantFrom('and' as const, 'or' as const),
        c: fc.array(tie('q'), { minLength: 2, maxLength: 4, depthIdentifier: 'q' }),
        implicit: fc.boolean(),
      }),
      not: fc.record({ k: fc.constant('not' as const), c: tie('q'), dash: fc.boolean() }),
    }));

    let nonEmpty = 0;
    let partial = 0;
    await fc.assert(
      fc.asyncProperty(q, fc.constantFrom(4, 11, 100), async (tree, size) => {
        const query = serialise(tree);
        const expected = tokens.filter((token) => matches(tree, token)).map((x) => x.id);
        if (expected.length > 0) nonEmpty++;
        if (expected.length > 0 && expected.length < tokens.length) partial++;
        const v1 = await searchV1(owner, query, size);
        expect({ query, ids: [...v1].sort() }).toEqual({ query, ids: [...expected].sort() });
        const v2 = await searchV2(owner, query, size);
        expect({ query, ids: v2 }).toEqual({ query, ids: v1 });
        const hidden = await searchV1(restricted, query, 100);
        const allowed = tokens.filter((token) => expected.includes(token.id) && visibleToRestricted(token));
        expect({ query, ids: hidden.sort() }).toEqual({ query, ids: allowed.map((x) => x.id).sort() });
      }),
      { seed: 20_261_124, numRuns: 150, endOnFailure: true },
    );
    // The queries were not trivial: most found some tokens and not others.
    expect(nonEmpty).toBeGreaterThan(60);
    expect(partial).toBeGreaterThan(50);
  }, 120_000);

  it('the three examples from the brief', async () => {
    const byCustomer = await searchV1(owner, 'type:card AND metadata.customer_id:"c 2"', 100);
    expect(byCustomer.sort()).toEqual(
      tokens
        .filter((x) => x.type === 'card' && x.metadata.customer_id === 'c 2')
        .map((x) => x.id)
        .sort(),
    );
    const [a, b] = [tokens[1].fingerprint, tokens[2].fingerprint];
    const notPci = await searchV1(
      owner,
      `(fingerprint:${a} OR fingerprint:${b}) AND NOT container:/pci/low`,
      100,
    );
    expect(notPci.sort()).toEqual(
      tokens
        .filter((x) => [a, b].includes(x.fingerprint) && !x.containers.some((c) => c.startsWith('/pci/low')))
        .map((x) => x.id)
        .sort(),
    );
    const march = await searchV1(owner, 'created_at:[2025-03-01 TO 2025-03-10]', 100);
    expect(march.sort()).toEqual(
      tokens
        .filter((x) => x.createdAt <= Date.UTC(2025, 2, 10))
        .map((x) => x.id)
        .sort(),
    );
  });

  it('a bad query is a 400 naming query and the position, on both routes, never echoing a value', async () => {
    for (const path of ['/tokens/search', '/v2/tokens/search']) {
      const res = await request(t.http)
        .post(path)
        .set('BT-API-KEY', owner)
        .send({ query: 'data:4242424242424242 AND (type:card' });
      expectProblem(res, 400);
      expect(res.body.errors).toEqual({
        query: [
          'the query is incomplete at character 37 (its end): an unclosed parenthesis or quote, or an operator with nothing after it',
        ],
      });
      expect(res.text).not.toContain('4242');
      const unknown = await request(t.http)
        .post(path)
        .set('BT-API-KEY', owner)
        .send({ query: 'type:card colour:red' });
      expectProblem(unknown, 400);
      expect(unknown.body.errors.query[0]).toMatch(/^unknown search field colour at character 11 /);
    }
    const many = Array.from({ length: 101 }, (_, i) => `type:t${i}`).join(' OR ');
    expectProblem(
      await request(t.http).post('/tokens/search').set('BT-API-KEY', owner).send({ query: many }),
      400,
    );
    expectProblem(
      await request(t.http).post('/tokens/search').set('BT-API-KEY', owner).send({ query: '' }),
      400,
    );
  });
});
