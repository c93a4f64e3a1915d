import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { authorizedSession, cardData, luhnCard } from './support/attacker';
import { Destination } from './support/destination';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TOKEN_PERMISSIONS = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search'];
const ID_FORMAT = 'id must be 1 to 400 characters of letters, digits, _ and -';
const LONGEST = `L${'0123456789'.repeat(39)}abcdefghi`;

/**
 * docs/tokens.md: a token id given at tokenize is any string of 1 to 400 letters, digits, `_` and
 * `-`, unique within its tenant only; generated ids stay uuids. Every route that names a token takes
 * such ids: reads, updates and deletes, `GET /tokens?id=`, a transaction's `token`, proxy expressions.
 */
describe('token ids', () => {
  let t: TestApp;
  let db: DataSource;
  let dest: Destination;
  let a: TestTenant;
  let b: TestTenant;
  let keyA: string;
  let keyB: string;

  beforeAll(async () => {
    dest = await new Destination().start();
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '100000' });
    db = t.app.get(DataSource);
    a = await newTenant(t, 'ids a');
    b = await newTenant(t, 'ids b');
    const permissions = [...new Set([...TOKEN_PERMISSIONS, ...ORCHESTRATION_PERMISSIONS])];
    keyA = (await newApplication(t, a.managementKey, { type: 'private', permissions })).key;
    keyB = (await newApplication(t, b.managementKey, { type: 'private', permissions })).key;
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });

  const create = (body: Record<string, unknown>, key = keyA) =>
    request(t.http).post('/tokens').set('BT-API-KEY', key).send(body);
  const tokenize = (body: unknown, key = keyA) =>
    request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .send(body as object);
  const get = (id: string, key = keyA) =>
    request(t.http)
      .get(`/tokens/${encodeURIComponent(id)}`)
      .set('BT-API-KEY', key);
  const text = (id: string, data = `value of ${id.slice(0, 20)}`) => ({ type: 'token', id, data });
  const count = async (tenant: TestTenant): Promise<number> =>
    (await db.query('SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1', [tenant.tenantId]))[0].n;

  describe('at tokenize', () => {
    it('takes 1 to 400 letters, digits, _ and -, kept as given; a generated id is a uuid', async () => {
      for (const id of ['x', LONGEST, 'Order_42-A', '_', '-', 'ABC', 'abc']) {
        const res = await create(text(id)).expect(201);
        expect(res.body.id).toBe(id);
        expect((await get(id).expect(200)).body).toMatchObject({ id, type: 'token' });
      }
      expect(LONGEST).toHaveLength(400);
      const generated = await create({ type: 'token', data: 'no id' }).expect(201);
      expect(generated.body.id).toMatch(UUID);
      const nested = await tokenize({ plain: 'p', el: text('nested_one') }).expect(201);
      expect(nested.body.plain).toMatch(UUID);
      expect(nested.body.el.id).toBe('nested_one');
    });

    it('refuses any other id with a 400 naming the field, creating nothing', async () => {
      const before = await count(a);
      for (const id of [
        `${LONGEST}x`,
        '',
        'a.b',
        'a/b',
        'a b',
        'a:b',
        'é',
        'caf\u00e9',
        '日本',
        'a%2Fb',
        42,
        null,
      ]) {
        const res = await create({ type: 'token', data: 'x', id });
        expectProblem(res, 400);
        expect(res.body.errors).toEqual({ id: [ID_FORMAT] });
      }
      const batch = await tokenize([
        text('fine_1'),
        { type: 'token', data: 'x', id: 'not.fine' },
        text('fine_2'),
      ]);
      expectProblem(batch, 400);
      expect(batch.body.errors).toEqual({ '[1].id': [ID_FORMAT] });
      const named = await tokenize({ deep: { el: { type: 'token', data: 'x', id: 'a/b' } } });
      expect(named.body.errors).toEqual({ 'deep.el.id': [ID_FORMAT] });
      expect(await count(a)).toBe(before);
    });

    it('an id taken in the tenant is a 409 and changes nothing; twice in one request is a 400', async () => {
      await create(text('taken', 'first')).expect(201);
      const again = await create(text('taken', 'second'));
      expectProblem(again, 409);
      expect(again.body.detail).toBe('A token with id taken already exists.');
      const before = await count(a);
      expectProblem(await tokenize([text('fresh_1'), text('taken')]), 409);
      expectProblem(await tokenize([text('twice'), text('twice')]), 400);
      expect(await count(a)).toBe(before);
      await get('fresh_1').expect(404);
      await get('twice').expect(404);
    });

    it('ids are per tenant: another tenant may take the same id, and neither sees the other', async () => {
      const mine = await create({ ...text('shared-id', 'a data'), metadata: { owner: 'a' } }).expect(201);
      const theirs = await create({ ...text('shared-id', 'b data'), metadata: { owner: 'b' } }, keyB).expect(
        201,
      );
      expect(theirs.body.tenant_id).toBe(b.tenantId);
      expect(mine.body.fingerprint).not.toBe(theirs.body.fingerprint);
      expect((await get('shared-id').expect(200)).body.metadata).toEqual({ owner: 'a' });
      expect((await get('shared-id', keyB).expect(200)).body.metadata).toEqual({ owner: 'b' });
      // B's only-own id is unknown to A, whatever A does with it; A's conflict concerns A's token only.
      await create(text('only-b'), keyB).expect(201);
      expectProblem(await get('only-b'), 404);
      expectProblem(await request(t.http).delete('/tokens/only-b').set('BT-API-KEY', keyA), 404);
      const list = await request(t.http)
        .get('/tokens?id=only-b&id=shared-id')
        .set('BT-API-KEY', keyA)
        .expect(200);
      expect(list.body.data.map((x: { metadata: unknown }) => x.metadata)).toEqual([{ owner: 'a' }]);
      // Deleting A's leaves B's.
      await request(t.http).delete('/tokens/shared-id').set('BT-API-KEY', keyA).expect(204);
      await get('shared-id').expect(404);
      expect((await get('shared-id', keyB).expect(200)).body.metadata).toEqual({ owner: 'b' });
      // A may take the id again once its own token is gone.
      await create(text('shared-id', 'a again')).expect(201);
    });

    it('the id of an expired token is free again, before the retention job has run', async () => {
      await create({ ...text('expiring', 'old'), metadata: { v: 'old' } }).expect(201);
      await db.query(
        `UPDATE tokens SET expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND id = 'expiring'`,
        [a.tenantId],
      );
      expectProblem(await get('expiring'), 404);
      await create({ ...text('expiring', 'new'), metadata: { v: 'new' } }).expect(201);
      expect((await get('expiring').expect(200)).body.metadata).toEqual({ v: 'new' });
    });

    it('a uuid is stored in lower case and found in either case, as before', async () => {
      const upper = 'ABCDEF01-2345-4678-9ABC-DEF012345678';
      const res = await create(text(upper)).expect(201);
      expect(res.body.id).toBe(upper.toLowerCase());
      await get(upper).expect(200);
      await get(upper.toLowerCase()).expect(200);
      expectProblem(await create(text(upper.toLowerCase())), 409);
    });
  });

  describe('routes that name a token', () => {
    it('GET, PATCH and DELETE /tokens/{id} by a client id', async () => {
      await create({ ...text('route_Token-1'), metadata: { a: '1' } }).expect(201);
      const patched = await request(t.http)
        .patch('/tokens/route_Token-1')
        .set('BT-API-KEY', keyA)
        .set('Content-Type', 'application/merge-patch+json')
        .send(JSON.stringify({ metadata: { b: '2' } }))
        .expect(200);
      expect(patched.body).toMatchObject({ id: 'route_Token-1', metadata: { a: '1', b: '2' } });
      // Ids are exact: another case names another (absent) token.
      expectProblem(await get('ROUTE_TOKEN-1'), 404);
      await request(t.http).delete('/tokens/route_Token-1').set('BT-API-KEY', keyA).expect(204);
      expectProblem(await get('route_Token-1'), 404);
    });

    it('an id that names nothing is a 404, whatever its form (never a 400 or a 500)', async () => {
      const paths = [
        'never-made',
        LONGEST.replace('L', 'M'),
        `${LONGEST}x`,
        'a.b',
        'a%2Fb',
        '%C3%A9',
        'a:b',
        '%20',
      ];
      for (const path of paths) {
        for (const method of ['get', 'patch', 'delete'] as const) {
          const res = await request(t.http)
            [method](`/tokens/${path}`)
            .set('BT-API-KEY', keyA)
            .send(method === 'patch' ? { metadata: { a: 'b' } } : undefined);
          expectProblem(res, 404);
        }
      }
    });

    it('v2 list pages by cursor across ids of any form, 400 characters included', async () => {
      const tenant = await newTenant(t, 'cursor');
      const key = (
        await newApplication(t, tenant.managementKey, { type: 'private', permissions: TOKEN_PERMISSIONS })
      ).key;
      const ids = [LONGEST, 'b', 'A', '0', 'z_-'];
      // One request: one created_at, so the id alone orders them.
      await tokenize(
        ids.map((id) => text(id)),
        key,
      ).expect(201);
      await tokenize(['generated'], key).expect(201);
      const seen: string[] = [];
      let start: string | undefined;
      do {
        const res = await request(t.http)
          .get('/v2/tokens')
          .query({ size: 1, ...(start ? { start } : {}) })
          .set('BT-API-KEY', key)
          .expect(200);
        seen.push(...res.body.data.map((x: { id: string }) => x.id));
        start = res.body.pagination.next;
      } while (start);
      expect(seen).toHaveLength(6);
      expect([...seen].sort()).toEqual([...ids, seen.find((id) => UUID.test(id))!].sort());
      const batch = seen.filter((id) => ids.includes(id));
      expect(batch).toEqual([...ids].sort().reverse());
    });
  });

  describe('GET /tokens?id=', () => {
    let reader: string;

    beforeAll(async () => {
      await tokenize([
        text('list-1'),
        text('list-2'),
        { type: 'card', id: 'list-card', data: cardData(luhnCard()) },
      ]).expect(201);
      reader = (
        await newApplication(t, a.managementKey, {
          type: 'private',
          rules: [{ priority: 1, container: '/general/', permissions: ['token:read'] }],
        })
      ).key;
    });
    const list = (query: string, key = keyA) =>
      request(t.http).get(`/tokens?${query}`).set('BT-API-KEY', key);
    const ids = (res: request.Response) => res.body.data.map((x: { id: string }) => x.id).sort();

    it('lists exactly the tokens named, leaving out unknown ids', async () => {
      expect(ids(await list('id=list-1').expect(200))).toEqual(['list-1']);
      const res = await list('id=list-1&id=list-card&id=unknown&id=list-1').expect(200);
      expect(ids(res)).toEqual(['list-1', 'list-card']);
      expect(res.body.pagination).toMatchObject({ total_items: 2 });
    });

    it('combines with the other filters (all must match)', async () => {
      expect(ids(await list('id=list-1&id=list-card&type=card').expect(200))).toEqual(['list-card']);
      expect(ids(await list('id=list-1&id=list-2&container=/general/').expect(200))).toEqual([
        'list-1',
        'list-2',
      ]);
      expect(ids(await list('id=list-card&container=/general/').expect(200))).toEqual([]);
    });

    it('leaves out the tokens the key may not read', async () => {
      expect(ids(await list('id=list-1&id=list-card', reader).expect(200))).toEqual(['list-1']);
    });

    it('takes at most 100 ids, each a token id; otherwise a 400 naming id', async () => {
      const hundred = Array.from({ length: 100 }, (_, i) => `id=n${i}`).join('&');
      expect(ids(await list(`${hundred}&id=list-2`.replace('id=n0&', '')).expect(200))).toEqual(['list-2']);
      const tooMany = await list(`${hundred}&id=list-2`);
      expectProblem(tooMany, 400);
      expect(Object.keys(tooMany.body.errors)).toEqual(['id']);
      for (const bad of ['a.b', 'a%2Fb', '%C3%A9', `${LONGEST}x`, '']) {
        const res = await list(`id=list-1&id=${bad}`);
        expectProblem(res, 400);
        expect(Object.keys(res.body.errors)).toEqual(['id']);
      }
    });

    it('is a v1 filter: GET /v2/tokens refuses id as it refuses any unknown parameter', async () => {
      const res = await request(t.http).get('/v2/tokens?id=list-1').set('BT-API-KEY', keyA);
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toEqual(['id']);
    });
  });

  it('a transaction pays with a card token of a client id; a malformed one is a 400 naming token', async () => {
    const connection = (await newConnection(t, keyA, { currencies: ['USD'], countries: ['US'] })).id;
    await create({
      type: 'card',
      id: 'pay_card-1',
      data: cardData('4242424242424242', { cvc: '123' }),
    }).expect(201);
    const pay = (token: unknown) =>
      request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', keyA)
        .send({ amount: 1299, currency: 'USD', connection_id: connection, token });
    const paid = await pay('pay_card-1').expect(201);
    expect(paid.body.payment_method).toMatchObject({ id: 'pay_card-1', label: '4242' });
    const fetched = await request(t.http)
      .get(`/orchestration/transactions/${paid.body.id}`)
      .set('BT-API-KEY', keyA)
      .expect(200);
    expect(fetched.body.payment_method.id).toBe('pay_card-1');
    for (const token of ['a.b', `${LONGEST}x`, '']) {
      const res = await pay(token);
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toEqual(['token']);
    }
    const unknown = await pay('no-such-card');
    expectProblem(unknown, 400);
    expect(unknown.body.errors).toEqual({ token: ['no such token'] });
  });

  it('a proxy expression names a token by a client id, in its own tenant only', async () => {
    const number = luhnCard();
    await create({ type: 'card', id: 'proxy-card_1', data: cardData(number, { cvc: '321' }) }).expect(201);
    await create({ type: 'token', id: 'proxy-card_1', data: 'tenant b value' }, keyB).expect(201);
    const longest = `P${'x'.repeat(399)}`;
    await create(text(longest, 'longest value')).expect(201);
    dest.reset();
    await request(t.http)
      .post('/proxy')
      .set('BT-API-KEY', keyA)
      .set('BT-PROXY-URL', dest.url('/api'))
      .send({
        card: '{{ proxy-card_1 }}',
        number: "{{ token: proxy-card_1 | json: '$.number' }}",
        longest: `{{ ${longest} }}`,
      })
      .expect(200);
    expect(JSON.parse(dest.received[0].body.toString())).toEqual({
      card: { number, expiration_month: 12, expiration_year: 2031, cvc: '321' },
      number,
      longest: 'longest value',
    });
    const unknown = await request(t.http)
      .post('/proxy')
      .set('BT-API-KEY', keyA)
      .set('BT-PROXY-URL', dest.url('/api'))
      .send({ x: '{{ only-in-b_proxy }}' });
    expectProblem(unknown, 400);
  });
});

/**
 * docs/tokens.md: `/` is a container. A token in `["/"]` is reachable only through flat
 * permissions or a rule on `/`; a rule on `/` covers every container.
 */
describe('the root container /', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let owner: string;
  let pub: string;
  let root: string;
  let pci: string;
  let general: string;

  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT_PER_MINUTE: '100000' });
    tenant = await newTenant(t, 'root container');
    owner = (
      await newApplication(t, tenant.managementKey, { type: 'private', permissions: TOKEN_PERMISSIONS })
    ).key;
    pub = (await newApplication(t, tenant.managementKey, { type: 'public', permissions: ['token:create'] }))
      .key;
    const make = async (containers?: string[], type = 'token') =>
      (
        await request(t.http)
          .post('/tokens')
          .set('BT-API-KEY', owner)
          .send(
            type === 'card'
              ? { type, data: cardData(luhnCard()), containers }
              : { type, data: `in ${containers?.join(',')}`, containers },
          )
          .expect(201)
      ).body.id as string;
    root = await make(['/']);
    pci = await make(undefined, 'card');
    general = await make(['/general/high/']);
  });
  afterAll(() => t.close());

  const readable = async (key: string): Promise<string[]> => {
    const out: string[] = [];
    for (const id of [root, pci, general]) {
      const res = await request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', key);
      // 404: no rule matches the token; 403: the rule that matches it refuses token:read.
      expect([200, 403, 404]).toContain(res.status);
      if (res.status === 200) out.push(id);
    }
    const list = await request(t.http)
      .get(`/tokens?id=${root}&id=${pci}&id=${general}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(list.body.data.map((x: { id: string }) => x.id).sort()).toEqual([...out].sort());
    return out;
  };
  const ruled = async (rules: unknown[], type = 'private') =>
    (await newApplication(t, tenant.managementKey, { type, rules })).key;

  it('a token may live in /, and flat permissions reach it', async () => {
    const res = await request(t.http).get(`/tokens/${root}`).set('BT-API-KEY', owner).expect(200);
    expect(res.body.containers).toEqual(['/']);
    expect(await readable(owner)).toEqual([root, pci, general]);
  });

  it('an application rule on / reads every container; a rule on /pci/ does not reach /', async () => {
    expect(
      await readable(await ruled([{ priority: 1, container: '/', permissions: ['token:read'] }])),
    ).toEqual([root, pci, general]);
    expect(
      await readable(await ruled([{ priority: 1, container: '/pci/', permissions: ['token:read'] }])),
    ).toEqual([pci]);
    // A narrower rule first still decides its own tokens; / then covers the rest.
    const both = await ruled([
      { priority: 1, container: '/pci/', permissions: ['token:create'] },
      { priority: 2, container: '/', permissions: ['token:read'] },
    ]);
    expect(await readable(both)).toEqual([root, general]);
  });

  it('token:create in / needs flat permissions or a rule on /', async () => {
    const pciOnly = await ruled(
      [{ priority: 1, container: '/pci/', permissions: ['token:create'] }],
      'public',
    );
    const refused = await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', pciOnly)
      .send({ type: 'token', data: 'x', containers: ['/'] });
    expectProblem(refused, 403);
    const rootRule = await ruled([{ priority: 1, container: '/', permissions: ['token:create'] }], 'public');
    await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', rootRule)
      .send({ type: 'token', data: 'x', containers: ['/'] })
      .expect(201);
    await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', pub)
      .send({ type: 'token', data: 'x', containers: ['/', '/a/'] })
      .expect(201);
  });

  it('sessions: a rule on / reads everything, one on /pci/ not /, conditions on the container /', async () => {
    const session = (rules: unknown[]) => authorizedSession(t, pub, owner, { rules });
    expect(
      await readable(await session([{ priority: 1, container: '/', permissions: ['token:read'] }])),
    ).toEqual([root, pci, general]);
    expect(
      await readable(await session([{ priority: 1, container: '/pci/', permissions: ['token:read'] }])),
    ).toEqual([pci]);
    const equalsRoot = [{ attribute: 'container', operator: 'equals', value: '/' }];
    expect(
      await readable(await session([{ priority: 1, conditions: equalsRoot, permissions: ['token:read'] }])),
    ).toEqual([root]);
    const underRoot = [{ attribute: 'container', operator: 'starts_with', value: '/' }];
    expect(
      await readable(await session([{ priority: 1, conditions: underRoot, permissions: ['token:read'] }])),
    ).toEqual([root, pci, general]);
  });

  it('a session rule on / needs the authorizing application to hold the permission on every container', async () => {
    const pciReader = await ruled([{ priority: 1, container: '/pci/', permissions: ['token:read'] }]);
    const created = await request(t.http).post('/sessions').set('BT-API-KEY', pub).expect(201);
    const res = await request(t.http)
      .post('/sessions/authorize')
      .set('BT-API-KEY', pciReader)
      .send({
        nonce: created.body.nonce,
        rules: [{ priority: 1, container: '/', permissions: ['token:read'] }],
      });
    expectProblem(res, 400);
    expect(res.body.errors).toEqual({
      'rules[0].permissions[0]': ['permission token:read is not held by the authorizing application on /'],
    });
  });

  it('refuses container paths other than / and /name/...', async () => {
    for (const container of ['//', '', '/PCI/', 'pci/', '/pci', '/a//b/']) {
      const res = await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', owner)
        .send({ type: 'token', data: 'x', containers: [container] });
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toEqual(['containers[0]']);
      const app = await request(t.http)
        .post('/applications')
        .set('BT-API-KEY', tenant.managementKey)
        .send({
          name: 'x',
          type: 'private',
          rules: [{ priority: 1, container, permissions: ['token:read'] }],
        });
      expectProblem(app, 400);
    }
  });
});
