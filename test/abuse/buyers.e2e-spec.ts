import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from '../support/app';
import { authorizedSession, cardData, luhnCard, sameGroup, tokenize } from '../support/attacker';
import { newConnection, ORCHESTRATION_PERMISSIONS } from '../support/orchestration';

const BUYERS = '/orchestration/buyers';
const BUYER_PERMISSIONS = [
  'orchestration:buyers:read',
  'orchestration:buyers:create',
  'orchestration:buyers:update',
  'orchestration:buyers:delete',
];
/** Low, so that a handful of candidates reaches it. */
const LIMIT = 3;

/** A problem naming `field` among its errors. */
function expectField(res: request.Response, status: number, field: string): void {
  expectProblem(res, status);
  expect(Object.keys(res.body.errors ?? {})).toContain(field);
}

/** The response says nothing of these (card numbers, token ids). */
function expectSilent(res: request.Response, secrets: string[]): void {
  const text = `${res.text ?? ''}${JSON.stringify(res.body ?? {})}`;
  for (const secret of secrets) expect(text).not.toContain(secret);
}

/**
 * Abuse classes around buyers and their stored cards: another tenant reaching a buyer, keys that may not
 * use buyers (public keys, sessions), storing a token the key may not use, and the card-number oracle
 * that "this buyer already has this card" (200 rather than 201) is, which the card enumeration guard
 * counts as it counts a read showing a fingerprint.
 */
describe('abuse: buyers and stored cards', () => {
  let t: TestApp;
  let db: DataSource;
  let victim: TestTenant;
  let merchant: string;
  let pub: string;
  let connection: string;
  let other: TestTenant;
  let otherKey: string;
  let otherConnection: string;

  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT_PER_MINUTE: '100000', CARD_ENUMERATION_LIMIT: String(LIMIT) });
    db = t.app.get(DataSource);
    const everything = [...ORCHESTRATION_PERMISSIONS, ...BUYER_PERMISSIONS];
    victim = await newTenant(t, 'buyers-victim');
    merchant = (await newApplication(t, victim.managementKey, { type: 'private', permissions: everything }))
      .key;
    pub = (await newApplication(t, victim.managementKey, { type: 'public', permissions: ['token:create'] }))
      .key;
    connection = (await newConnection(t, merchant, { currencies: ['USD'], countries: ['US'] })).id;
    other = await newTenant(t, 'buyers-attacker');
    otherKey = (await newApplication(t, other.managementKey, { type: 'private', permissions: everything }))
      .key;
    otherConnection = (await newConnection(t, otherKey, { currencies: ['USD'], countries: ['US'] })).id;
  });
  afterAll(() => t.close());

  const call = (method: 'get' | 'post' | 'put' | 'delete', path: string, apiKey: string, body?: object) => {
    const req = request(t.http)[method](path).set('BT-API-KEY', apiKey);
    return body === undefined ? req : req.send(body);
  };
  const newBuyer = async (apiKey = merchant, body: object = {}): Promise<string> =>
    (await call('post', BUYERS, apiKey, body).expect(201)).body.id;
  const card = (number: string, extra: Record<string, unknown> = {}) => ({
    type: 'card',
    data: cardData(number),
    ...extra,
  });
  const cardToken = async (apiKey: string, number = luhnCard(), extra: Record<string, unknown> = {}) =>
    (await tokenize(t, apiKey, card(number, extra)).expect(201)).body.id as string;
  const attach = (buyer: string, token: string, apiKey: string) =>
    call('post', `${BUYERS}/${buyer}/payment-methods`, apiKey, { token });
  const methods = async (buyer: string): Promise<string[]> =>
    ((await call('get', `${BUYERS}/${buyer}/payment-methods`, merchant).expect(200)).body as { id: string }[])
      .map((m) => m.id)
      .sort();
  const pay = (body: Record<string, unknown>, apiKey: string, connectionId = connection) =>
    call('post', '/orchestration/transactions', apiKey, {
      amount: 1000,
      currency: 'USD',
      connection_id: connectionId,
      ...body,
    });
  /** Every row of the tenant's buyers, stored cards and transactions: what must not change. */
  const snapshot = async (tenantId: string) => ({
    buyers: await db.query('SELECT * FROM buyers WHERE tenant_id = $1 ORDER BY id', [tenantId]),
    methods: await db.query('SELECT * FROM buyer_payment_methods WHERE tenant_id = $1 ORDER BY token_id', [
      tenantId,
    ]),
    transactions: (
      await db.query('SELECT count(*)::int AS n FROM transactions WHERE tenant_id = $1', [tenantId])
    )[0].n,
  });
  /** Every buyers route, for one buyer and one token. */
  const routes = (buyer: string, token: string, spare = token) =>
    [
      ['get', BUYERS],
      ['post', BUYERS, { external_identifier: 'intruder' }],
      ['get', `${BUYERS}/${buyer}`],
      ['put', `${BUYERS}/${buyer}`, { display_name: 'owned' }],
      ['delete', `${BUYERS}/${buyer}`],
      ['post', `${BUYERS}/${buyer}/payment-methods`, { token: spare }],
      ['get', `${BUYERS}/${buyer}/payment-methods`],
      ['delete', `${BUYERS}/${buyer}/payment-methods/${token}`],
    ] as ['get' | 'post' | 'put' | 'delete', string, object?][];

  describe('another tenant', () => {
    let buyer: string;
    let number: string;
    let token: string;

    beforeAll(async () => {
      buyer = await newBuyer(merchant, { external_identifier: 'victim-1', display_name: 'Victim' });
      number = luhnCard();
      token = await cardToken(merchant, number);
      await attach(buyer, token, merchant).expect(201);
    });

    it("neither sees nor touches a buyer or its cards: every route is a 404 and the victim's rows stay as they were", async () => {
      const before = await snapshot(victim.tenantId);
      const own = await cardToken(otherKey);
      const tries = [
        call('get', `${BUYERS}/${buyer}`, otherKey),
        call('put', `${BUYERS}/${buyer}`, otherKey, { display_name: 'owned', external_identifier: null }),
        call('delete', `${BUYERS}/${buyer}`, otherKey),
        attach(buyer, own, otherKey),
        attach(buyer, token, otherKey),
        call('get', `${BUYERS}/${buyer}/payment-methods`, otherKey),
        call('delete', `${BUYERS}/${buyer}/payment-methods/${token}`, otherKey),
      ];
      for (const res of await Promise.all(tries)) {
        expectProblem(res, 404);
        expectSilent(res, [number, token]);
      }
      for (const query of [{}, { external_identifier: 'victim-1' }, { search: 'vic' }]) {
        const listed = await request(t.http).get(BUYERS).query(query).set('BT-API-KEY', otherKey).expect(200);
        expect(listed.body.data).toEqual([]);
      }
      expect(await snapshot(victim.tenantId)).toEqual(before);
    });

    it("cannot store the victim's token for a buyer of its own (400 token), nor charge the victim's buyer (400 buyer_id)", async () => {
      const before = await snapshot(victim.tenantId);
      const mine = await newBuyer(otherKey);
      const stolen = await attach(mine, token, otherKey);
      expectField(stolen, 400, 'token');
      expectSilent(stolen, [number, token]);
      const charges = [
        pay({ buyer_id: buyer }, otherKey, otherConnection),
        pay({ buyer_id: buyer, token: await cardToken(otherKey), store: true }, otherKey, otherConnection),
        pay({ buyer_id: buyer, token }, otherKey, otherConnection),
      ];
      for (const res of await Promise.all(charges)) {
        expectField(res, 400, 'buyer_id');
        expectSilent(res, [number, token]);
      }
      const otherTransactions = (await snapshot(other.tenantId)).transactions;
      expect(otherTransactions).toBe(0);
      const listed = await request(t.http)
        .get('/orchestration/transactions')
        .query({ buyer_id: buyer })
        .set('BT-API-KEY', otherKey)
        .expect(200);
      expect(listed.body.data).toEqual([]);
      expect(await snapshot(victim.tenantId)).toEqual(before);
    });
  });

  describe('keys that may not use buyers', () => {
    let buyer: string;
    let token: string;

    beforeAll(async () => {
      buyer = await newBuyer(merchant, { external_identifier: 'guarded-1' });
      token = await cardToken(merchant);
      await attach(buyer, token, merchant).expect(201);
    });

    it('no key or an unknown key is a 401 on every buyers route', async () => {
      for (const [method, path, body] of routes(buyer, token)) {
        const bare = request(t.http)[method](path);
        expectProblem(await (body ? bare.send(body) : bare), 401);
        expectProblem(await call(method, path, 'key_not_a_real_one', body), 401);
      }
    });

    it('a public key is refused (401/403) on every buyers route; nothing changes', async () => {
      const before = await snapshot(victim.tenantId);
      for (const [method, path, body] of routes(buyer, token)) {
        const res = await call(method, path, pub, body);
        expect([401, 403]).toContain(res.status);
        expectSilent(res, [token]);
      }
      expect(await snapshot(victim.tenantId)).toEqual(before);
    });

    it('a session is refused on every buyers route unless a private application holding the buyers permissions granted them', async () => {
      // Sessions are delegates (docs/permissions.md): one holds what its authorizer granted it, and an
      // authorizer grants only what it holds itself.
      const holder = await newApplication(t, victim.managementKey, {
        type: 'private',
        permissions: [...BUYER_PERMISSIONS, 'token:use', 'token:read'],
      });
      const lacking = await newApplication(t, victim.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:use'],
      });
      const escalation = await call('post', '/sessions', pub).expect(201);
      const refusedGrant = await call('post', '/sessions/authorize', lacking.key, {
        nonce: escalation.body.nonce,
        permissions: BUYER_PERMISSIONS,
      });
      expectProblem(refusedGrant, 400);
      const pending = (await call('post', '/sessions', pub).expect(201)).body.session_key as string;
      const otherGrants = await authorizedSession(t, pub, holder.key, { permissions: ['token:read'] });
      const granted = await authorizedSession(t, pub, holder.key, {
        permissions: [...BUYER_PERMISSIONS, 'token:use'],
      });
      const passed: string[] = [];
      const refused: string[] = [];
      // Each route on a buyer and stored card of its own, so that one route let through does not hide the next.
      for (const [i] of routes(buyer, token).entries()) {
        const own = await newBuyer();
        const [ownToken, spare] = [await cardToken(merchant), await cardToken(merchant)];
        await attach(own, ownToken, merchant).expect(201);
        for (const [label, session] of [
          ['pending', pending],
          ['granted other permissions', otherGrants],
        ] as const) {
          const before = JSON.stringify(await snapshot(victim.tenantId));
          const [method, path, body] = routes(own, ownToken, spare)[i];
          const res = await call(method, path, session, body);
          const changed = JSON.stringify(await snapshot(victim.tenantId)) !== before;
          if (![401, 403].includes(res.status) || changed)
            passed.push(
              `${label} session: ${method} ${path} ${res.status}` + (changed ? ' (rows changed)' : ''),
            );
        }
        const [method, path, body] = routes(own, ownToken, spare)[i];
        const res = await call(method, path, granted, body);
        if (res.status >= 400) refused.push(`granted session: ${method} ${path} ${res.status}`);
      }
      expect(passed).toEqual([]);
      expect(refused).toEqual([]);
    });

    it('orchestration:buyers:update without token:use on the token cannot store it: 400 token, nothing stored', async () => {
      const target = await newBuyer();
      const number = luhnCard();
      const theirs = await cardToken(merchant, number, { containers: ['/victim/'] });
      const noUse = (
        await newApplication(t, victim.managementKey, { type: 'private', permissions: BUYER_PERMISSIONS })
      ).key;
      const elsewhere = (
        await newApplication(t, victim.managementKey, {
          type: 'private',
          permissions: BUYER_PERMISSIONS,
          rules: [{ priority: 1, container: '/attacker/', permissions: ['token:use'] }],
        })
      ).key;
      for (const apiKey of [noUse, elsewhere]) {
        const res = await attach(target, theirs, apiKey);
        expectField(res, 400, 'token');
        expectSilent(res, [number, theirs]);
      }
      expect(await methods(target)).toEqual([]);
      // Its own container's token it may store.
      const own = await cardToken(merchant, luhnCard(), { containers: ['/attacker/'] });
      await attach(target, own, elsewhere).expect(201);
      expect(await methods(target)).toEqual([own]);
    });
  });

  describe('card-number oracle: is this card already stored for the buyer', () => {
    /**
     * The victim's card, tokenized by the merchant (counted: one of its group's LIMIT) and stored for a
     * buyer; the attacker's candidates of its group (first 6 and last 4 digits), the victim's number last,
     * tokenized by the public key (never counted at tokenize).
     */
    async function scene() {
      const number = luhnCard();
      const buyer = await newBuyer();
      const stored = await cardToken(merchant, number);
      await attach(buyer, stored, merchant).expect(201);
      const numbers = [...sameGroup(number, 9), number];
      const made = await tokenize(
        t,
        pub,
        numbers.map((n) => card(n)),
      ).expect(201);
      const candidates = (made.body as { id: string; fingerprint?: string }[]).map((c) => {
        expect(c.fingerprint).toBeUndefined();
        return c.id;
      });
      return { number, numbers, buyer, stored, candidates };
    }

    it('storing candidates is counted: past the limit a 429 card_enumeration_suspected, and the 200 of the victim card never comes', async () => {
      const { number, numbers, buyer, stored, candidates } = await scene();
      const attacker = (
        await newApplication(t, victim.managementKey, {
          type: 'private',
          permissions: ['orchestration:buyers:update', 'token:use'],
        })
      ).key;
      const statuses: number[] = [];
      for (const candidate of candidates) {
        const res = await attach(buyer, candidate, attacker);
        statuses.push(res.status);
        if (res.status === 429) {
          expectProblem(res, 429);
          expect(res.body.code).toBe('card_enumeration_suspected');
        }
        expectSilent(res, numbers);
      }
      console.log(`attach: statuses ${statuses.join(',')}`);
      const created = statuses.filter((s) => s === 201).length;
      expect(statuses).not.toContain(200);
      // The victim's card, counted when the merchant made it, takes one of the group's LIMIT.
      expect(created).toBeLessThanOrEqual(LIMIT - 1);
      expect(statuses.slice(created)).toEqual(Array(candidates.length - created).fill(429));
      expect(statuses[statuses.length - 1]).toBe(429);
      // What was refused stored nothing; the victim's card is still the one stored.
      expect(await methods(buyer)).toEqual([stored, ...candidates.slice(0, created)].sort());
      // A refusal is a `refuse` audit row naming no number.
      const refusals = await db.query(
        `SELECT message FROM audit_logs WHERE tenant_id = $1 AND operation = 'refuse'`,
        [victim.tenantId],
      );
      expect(refusals.length).toBeGreaterThanOrEqual(candidates.length - created);
      expect(JSON.stringify(refusals)).not.toContain(number.slice(6, 12));
    });

    it('a key that tokenizes without token:read is not counted at tokenize: storing its tokens is counted the same', async () => {
      const { number, buyer, stored } = await scene();
      const attacker = (
        await newApplication(t, victim.managementKey, {
          type: 'private',
          permissions: ['orchestration:buyers:update', 'token:create', 'token:use'],
        })
      ).key;
      const numbers = [...sameGroup(number, 6), number];
      const made = await tokenize(
        t,
        attacker,
        numbers.map((n) => card(n)),
      ).expect(201);
      const statuses: number[] = [];
      for (const { id } of made.body as { id: string }[])
        statuses.push((await attach(buyer, id, attacker)).status);
      console.log(`attach of own tokens: statuses ${statuses.join(',')}`);
      expect(statuses).not.toContain(200);
      expect(statuses[statuses.length - 1]).toBe(429);
      expect(await methods(buyer)).toContain(stored);
    });

    it('store: true on a transaction for candidates is refused with 429 past the limit, before anything is created', async () => {
      const { numbers, buyer, stored, candidates } = await scene();
      const attacker = (
        await newApplication(t, victim.managementKey, {
          type: 'private',
          permissions: ['orchestration:buyers:read', 'orchestration:buyers:update', 'token:use'],
        })
      ).key;
      // Storing through a payment needs what storing directly needs.
      const readOnly = (
        await newApplication(t, victim.managementKey, {
          type: 'private',
          permissions: ['orchestration:buyers:read', 'token:use'],
        })
      ).key;
      const unstored = await pay({ buyer_id: buyer, token: candidates[0], store: true }, readOnly);
      expectProblem(unstored, 403);
      const statuses: number[] = [];
      for (const candidate of candidates) {
        const before = await snapshot(victim.tenantId);
        const res = await pay({ buyer_id: buyer, token: candidate, store: true }, attacker);
        statuses.push(res.status);
        expectSilent(res, numbers);
        if (res.status === 429) {
          expectProblem(res, 429);
          expect(res.body.code).toBe('card_enumeration_suspected');
          expect(await snapshot(victim.tenantId)).toEqual(before);
        } else expect(res.body.status).toBe('authorization_succeeded');
      }
      console.log(`store: true: statuses ${statuses.join(',')}`);
      const created = statuses.filter((s) => s === 201).length;
      expect(created).toBeLessThanOrEqual(LIMIT - 1);
      expect(statuses.slice(created)).toEqual(Array(candidates.length - created).fill(429));
      expect(await methods(buyer)).toEqual([stored, ...candidates.slice(0, created)].sort());
    });

    it('the merchant storing its own cards (tokenized with token:read, counted then) is not refused', async () => {
      const buyer = await newBuyer();
      const number = luhnCard();
      const tokens: string[] = [];
      for (const n of [number, ...sameGroup(number, LIMIT - 1)]) tokens.push(await cardToken(merchant, n));
      for (const token of tokens) await attach(buyer, token, merchant).expect(201);
      // The same card again answers the stored one, counting nothing new.
      await attach(buyer, await cardToken(merchant, number), merchant).expect(200);
      expect(await methods(buyer)).toEqual([...tokens].sort());
    });
  });
});
