import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startAppAlone, TestApp, TestTenant } from './support/app';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
const card = (over: Record<string, unknown> = {}) => ({ type: 'card', data: { ...CARD, ...over } });

describe('token vault', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let pvt: string;
  let db: DataSource;

  beforeAll(async () => {
    t = await startAppAlone('tokens');
    db = t.app.get(DataSource);
    tenant = await newTenant(t);
    pvt = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search'],
      })
    ).key;
  });
  afterAll(() => t.close());

  const tokenize = (body: unknown, key = pvt) =>
    request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .send(body as object);
  const count = async (tenantId = tenant.tenantId): Promise<number> =>
    (await db.query('SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1', [tenantId]))[0].n;

  describe('POST /tokenize shapes', () => {
    it('a single card element returns the token object with its mask', async () => {
      const res = await tokenize(card()).expect(201);
      expect(res.body).toEqual({
        id: expect.any(String),
        tenant_id: tenant.tenantId,
        type: 'card',
        mask: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2030 },
        enrichments: { card_details: { bin: '424242', last4: '4242', brand: 'visa' } },
        fingerprint: expect.stringMatching(/^[0-9A-Za-z]{40,50}$/),
        fingerprint_expression: '{{ data.number }}',
        containers: ['/pci/high/'],
        created_by: expect.any(String),
        created_at: expect.any(String),
      });
      expect(JSON.stringify(res.body)).not.toContain('123"');
    });

    it('an object of strings, elements and nested objects keeps its shape', async () => {
      const res = await tokenize({
        email: 'jane@example.com',
        card: card(),
        bank: { type: 'bank', data: { routing_number: '021000021', account_number: '123456789' } },
        nested: { deeper: ['a', { type: 'token', data: { any: ['json'] }, metadata: { k: 'v' } }] },
      }).expect(201);
      expect(Object.keys(res.body)).toEqual(['email', 'card', 'bank', 'nested']);
      expect(res.body.email).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.card.data).toEqual({
        number: 'XXXXXXXXXXXX4242',
        expiration_month: 12,
        expiration_year: 2030,
      });
      expect(res.body.card.mask).toBeUndefined();
      expect(res.body.bank.data).toEqual({ routing_number: '021000021', account_number: 'XXXXX6789' });
      expect(res.body.bank.containers).toEqual(['/bank/high/']);
      expect(res.body.nested.deeper[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.nested.deeper[1]).toMatchObject({
        type: 'token',
        metadata: { k: 'v' },
        containers: ['/general/high/'],
      });
      expect(res.body.nested.deeper[1].data).toBeUndefined();
    });

    it('an array keeps its order', async () => {
      const res = await tokenize(['first', card(), 'third']).expect(201);
      expect(res.body).toHaveLength(3);
      expect(res.body[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body[1].type).toBe('card');
      expect(res.body[2]).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body[0]).not.toBe(res.body[2]);
    });

    it('accepts 100 tokens and refuses 101, creating nothing', async () => {
      const before = await count();
      await tokenize(Array.from({ length: 100 }, (_, i) => `v${i}`)).expect(201);
      expect(await count()).toBe(before + 100);
      const res = await tokenize(Array.from({ length: 101 }, (_, i) => `w${i}`));
      expectProblem(res, 400);
      expect(res.body.detail).toMatch(/100/);
      expect(await count()).toBe(before + 100);
    });

    it('is atomic: one bad card among 50 lists it and creates nothing', async () => {
      const before = await count();
      const body = Array.from({ length: 50 }, () => card());
      body[37] = card({ number: '4242424242424241' });
      const res = await tokenize(body);
      expectProblem(res, 400);
      expect(res.body.errors).toEqual({ '[37].data.number': ['card number fails the Luhn check'] });
      expect(await count()).toBe(before);
    });

    it('reports every invalid element by path in one 400', async () => {
      const res = await tokenize({
        a: card({ expiration_month: 13, cvc: '1' }),
        b: { type: 'bank', data: { routing_number: '021000022', account_number: '12' } },
        c: { type: 'wallet', data: 'x' },
        d: {
          type: 'token',
          data: 'x',
          containers: ['bad'],
          search_indexes: ['{{ data'],
          expires_at: '2001-01-01T00:00:00Z',
          extra: 1,
        },
        e: 42,
      });
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors).sort()).toEqual(
        [
          'a.data.cvc',
          'a.data.expiration_month',
          'b.data.account_number',
          'b.data.routing_number',
          'c.type',
          'd.containers[0]',
          'd.expires_at',
          'd.extra',
          'd.search_indexes[0]',
          'e',
        ].sort(),
      );
    });
  });

  describe('POST /tokens', () => {
    it('creates one token and returns it with its mask', async () => {
      const res = await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', pvt)
        .send({ ...card(), metadata: { order: '42' }, containers: ['/pci/cards/'] })
        .expect(201);
      expect(res.body).toMatchObject({
        type: 'card',
        mask: { number: 'XXXXXXXXXXXX4242' },
        metadata: { order: '42' },
        containers: ['/pci/cards/'],
      });
      const bad = await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', pvt)
        .send({ type: 'card', data: { number: '1' } });
      expectProblem(bad, 400);
      expect(Object.keys(bad.body.errors).sort()).toEqual([
        'data.expiration_month',
        'data.expiration_year',
        'data.number',
      ]);
      expectProblem(await request(t.http).post('/tokens').set('BT-API-KEY', pvt).send(['x']), 400);
    });
  });

  describe('fingerprints and deduplication', () => {
    it('gives the same card the same fingerprint within a tenant and an unrelated one in another', async () => {
      const a = await tokenize(card()).expect(201);
      const b = await tokenize(card({ cvc: '999' })).expect(201);
      expect(a.body.fingerprint).toBe(b.body.fingerprint);
      expect(a.body.id).not.toBe(b.body.id);
      const other = await newTenant(t, 'other');
      const otherKey = (
        await newApplication(t, other.managementKey, { type: 'private', permissions: ['token:create'] })
      ).key;
      const c = await tokenize(card(), otherKey).expect(201);
      expect(c.body.fingerprint).not.toBe(a.body.fingerprint);
    });

    it('returns the existing live token with deduplicate_token', async () => {
      const first = await tokenize({ type: 'token', data: 'dedup-me', deduplicate_token: true }).expect(201);
      const second = await tokenize({ type: 'token', data: 'dedup-me', deduplicate_token: true }).expect(201);
      expect(second.body.id).toBe(first.body.id);
      const third = await tokenize({ type: 'token', data: 'dedup-me' }).expect(201);
      expect(third.body.id).not.toBe(first.body.id);
    });
  });

  describe('search', () => {
    it('finds a token by data: through a search index, never storing the value in clear', async () => {
      const created = await tokenize({
        type: 'token',
        data: 'search-value-7788',
        search_indexes: ['{{ data }}'],
        metadata: { customer: 'c 1' },
      }).expect(201);
      const res = await request(t.http)
        .post('/tokens/search')
        .set('BT-API-KEY', pvt)
        .send({ query: 'data:search-value-7788 metadata.customer:"c 1"' })
        .expect(200);
      expect(res.body.data.map((x: { id: string }) => x.id)).toEqual([created.body.id]);
      expect(res.body.pagination.total_items).toBe(1);
      const none = await request(t.http)
        .post('/tokens/search')
        .set('BT-API-KEY', pvt)
        .send({ query: 'data:other' })
        .expect(200);
      expect(none.body.data).toEqual([]);
      const stored = await db.query(
        'SELECT count(*)::int AS n FROM token_search_indexes WHERE token_id = $1',
        [created.body.id],
      );
      expect(stored[0].n).toBe(1);
      expectProblem(
        await request(t.http).post('/tokens/search').set('BT-API-KEY', pvt).send({ query: 'colour:red' }),
        400,
      );
    });

    it('lists with filters and offset pagination', async () => {
      const lister = await newTenant(t, 'lister');
      const key = (
        await newApplication(t, lister.managementKey, {
          type: 'private',
          permissions: ['token:create', 'token:read'],
        })
      ).key;
      await tokenize(
        { a: card(), b: 'x', c: { type: 'token', data: 'y', metadata: { plan: 'gold' } } },
        key,
      ).expect(201);
      const all = await request(t.http).get('/tokens?size=2').set('BT-API-KEY', key).expect(200);
      expect(all.body.pagination).toEqual({ total_items: 3, page_number: 1, page_size: 2, total_pages: 2 });
      const cards = await request(t.http).get('/tokens?type=card').set('BT-API-KEY', key).expect(200);
      expect(cards.body.data).toHaveLength(1);
      expect(cards.body.data[0].mask.number).toBe('XXXXXXXXXXXX4242');
      const gold = await request(t.http).get('/tokens?metadata.plan=gold').set('BT-API-KEY', key).expect(200);
      expect(gold.body.data).toHaveLength(1);
      const general = await request(t.http)
        .get('/tokens?container=/general/')
        .set('BT-API-KEY', key)
        .expect(200);
      expect(general.body.pagination.total_items).toBe(2);
      expectProblem(await request(t.http).get('/tokens?size=101').set('BT-API-KEY', key), 400);
      expectProblem(await request(t.http).get('/tokens?colour=red').set('BT-API-KEY', key), 400);
    });
  });

  describe('read, update, delete, expiry', () => {
    it('reads a token with its mask and updates it with merge semantics', async () => {
      const created = await tokenize({
        ...card(),
        metadata: { a: '1', b: '2' },
        search_indexes: ['{{ data.number | last4 }}'],
      }).expect(201);
      const got = await request(t.http).get(`/tokens/${created.body.id}`).set('BT-API-KEY', pvt).expect(200);
      expect(got.body.mask.number).toBe('XXXXXXXXXXXX4242');
      const patch = (body: Record<string, unknown>) =>
        request(t.http)
          .patch(`/tokens/${created.body.id}`)
          .set('BT-API-KEY', pvt)
          .set('Content-Type', 'application/merge-patch+json')
          .send(JSON.stringify(body));
      // Search indexes sent unchanged are accepted; changing them needs reveal (test/abuse/stored-data).
      const patched = await patch({
        metadata: { b: null, c: '3' },
        search_indexes: ['{{ data.number | last4 }}'],
      }).expect(200);
      expectProblem(await patch({ search_indexes: ['{{ data.number }}'] }), 403);
      expect(patched.body.metadata).toEqual({ a: '1', c: '3' });
      expect(patched.body.search_indexes).toEqual(['{{ data.number | last4 }}']);
      expect(patched.body.modified_at).toEqual(expect.any(String));
      const found = await request(t.http)
        .post('/tokens/search')
        .set('BT-API-KEY', pvt)
        .send({ query: `data:4242 id:${created.body.id}` })
        .expect(200);
      expect(found.body.data).toHaveLength(1);
      expectProblem(
        await request(t.http).patch(`/tokens/${created.body.id}`).set('BT-API-KEY', pvt).send({ data: 'x' }),
        400,
      );
    });

    it('deletes a token: 204 then 404, and its data is gone', async () => {
      const created = await tokenize(card()).expect(201);
      await request(t.http).delete(`/tokens/${created.body.id}`).set('BT-API-KEY', pvt).expect(204);
      expectProblem(await request(t.http).get(`/tokens/${created.body.id}`).set('BT-API-KEY', pvt), 404);
      const rows = await db.query('SELECT count(*)::int AS n FROM token_cvcs WHERE token_id = $1', [
        created.body.id,
      ]);
      expect(rows[0].n).toBe(0);
      // Its search indexes go with it too (a statement trigger, migration 28), and another token's stay.
      const indexed = await tokenize({
        type: 'token',
        data: 'findable',
        search_indexes: ['{{ data }}'],
      }).expect(201);
      const kept = await tokenize({ type: 'token', data: 'findable', search_indexes: ['{{ data }}'] }).expect(
        201,
      );
      const indexes = async (id: string) =>
        (await db.query('SELECT count(*)::int AS n FROM token_search_indexes WHERE token_id = $1', [id]))[0]
          .n;
      expect(await indexes(indexed.body.id)).toBe(1);
      await request(t.http).delete(`/tokens/${indexed.body.id}`).set('BT-API-KEY', pvt).expect(204);
      expect(await indexes(indexed.body.id)).toBe(0);
      expect(await indexes(kept.body.id)).toBe(1);
    });

    it('treats expired tokens as deleted and purges them with the job', async () => {
      const created = await tokenize({
        type: 'token',
        data: 'short-lived',
        expires_at: new Date(Date.now() + 60_000).toISOString(),
      }).expect(201);
      await request(t.http).get(`/tokens/${created.body.id}`).set('BT-API-KEY', pvt).expect(200);
      const { Clock } = await import('../src/common/jobs/clock');
      const { RetentionJob } = await import('../src/common/jobs/retention.job');
      const clock = t.app.get(Clock);
      clock.advance(2 * 60_000);
      try {
        expectProblem(await request(t.http).get(`/tokens/${created.body.id}`).set('BT-API-KEY', pvt), 404);
        await t.app.get(RetentionJob).runNow('expired-tokens');
        const rows = await db.query('SELECT count(*)::int AS n FROM tokens WHERE id = $1', [created.body.id]);
        expect(rows[0].n).toBe(0);
      } finally {
        clock.reset();
      }
    });

    it('keeps the CVC apart and deletes it after an hour', async () => {
      const created = await tokenize(card()).expect(201);
      const { Clock } = await import('../src/common/jobs/clock');
      const { RetentionJob } = await import('../src/common/jobs/retention.job');
      const cvcs = async () =>
        (
          await db.query('SELECT count(*)::int AS n FROM token_cvcs WHERE token_id = $1', [created.body.id])
        )[0].n;
      expect(await cvcs()).toBe(1);
      await t.app.get(RetentionJob).runNow('cvc-retention');
      expect(await cvcs()).toBe(1);
      const clock = t.app.get(Clock);
      clock.advance(61 * 60_000);
      try {
        await t.app.get(RetentionJob).runNow('cvc-retention');
        expect(await cvcs()).toBe(0);
      } finally {
        clock.reset();
      }
      await request(t.http).get(`/tokens/${created.body.id}`).set('BT-API-KEY', pvt).expect(200);
    });
  });

  describe('access rules', () => {
    it('a /general/ rule-scoped application can tokenize a string but not a card', async () => {
      const scoped = await newApplication(t, tenant.managementKey, {
        type: 'public',
        rules: [{ priority: 1, container: '/general/', permissions: ['token:create'] }],
      });
      await tokenize({ email: 'x@example.com' }, scoped.key).expect(201);
      const res = await tokenize(card(), scoped.key);
      expectProblem(res, 403);
      expect(res.body.detail).toContain('/pci/high/');
    });

    it('redact hides the mask; tokens outside every rule are 404', async () => {
      const created = await tokenize(card()).expect(201);
      const general = await tokenize({ type: 'token', data: 'g' }).expect(201);
      const reader = await newApplication(t, tenant.managementKey, {
        type: 'private',
        rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'], transform: 'redact' }],
      });
      const got = await request(t.http)
        .get(`/tokens/${created.body.id}`)
        .set('BT-API-KEY', reader.key)
        .expect(200);
      expect(got.body.mask).toBeUndefined();
      expect(got.body.data).toBeUndefined();
      expectProblem(
        await request(t.http).get(`/tokens/${general.body.id}`).set('BT-API-KEY', reader.key),
        404,
      );
      const list = await request(t.http).get('/tokens?size=100').set('BT-API-KEY', reader.key).expect(200);
      expect(list.body.data.every((x: { type: string }) => x.type === 'card')).toBe(true);
    });
  });

  it('another tenant cannot read, update, delete or search a token (404 everywhere)', async () => {
    const created = await tokenize({ type: 'token', data: 'mine', search_indexes: ['{{ data }}'] }).expect(
      201,
    );
    const other = await newTenant(t, 'intruder');
    const key = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ['token:read', 'token:update', 'token:delete', 'token:search'],
      })
    ).key;
    expectProblem(await request(t.http).get(`/tokens/${created.body.id}`).set('BT-API-KEY', key), 404);
    expectProblem(
      await request(t.http)
        .patch(`/tokens/${created.body.id}`)
        .set('BT-API-KEY', key)
        .send({ metadata: { a: 'b' } }),
      404,
    );
    expectProblem(await request(t.http).delete(`/tokens/${created.body.id}`).set('BT-API-KEY', key), 404);
    const search = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', key)
      .send({ query: `id:${created.body.id}` })
      .expect(200);
    expect(search.body.data).toEqual([]);
    const listed = await request(t.http).get('/tokens?size=100').set('BT-API-KEY', key).expect(200);
    expect(listed.body.data.map((x: { id: string }) => x.id)).not.toContain(created.body.id);
    const byData = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', key)
      .send({ query: 'data:mine' })
      .expect(200);
    expect(byData.body.data).toEqual([]);
    await request(t.http).get(`/tokens/${created.body.id}`).set('BT-API-KEY', pvt).expect(200);
  });
});
