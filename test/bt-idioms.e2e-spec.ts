import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from './support/app';

/** Basis Theory idioms (docs/tokens.md): card enrichments and the ISO 8601 forms dates take. */
describe('Basis Theory idioms: enrichments and dates', () => {
  let t: TestApp;
  let key: string;
  let managementKey: string;

  const tokenize = (body: Record<string, unknown>) =>
    request(t.http).post('/tokens').set('BT-API-KEY', key).send(body);
  const card = (number: string, extra: Record<string, unknown> = {}) =>
    tokenize({ type: 'card', data: { number, expiration_month: 12, expiration_year: 2030 }, ...extra });

  beforeAll(async () => {
    t = await startApp();
    const tenant = await newTenant(t);
    managementKey = tenant.managementKey;
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:update', 'token:delete'],
      })
    ).key;
  });
  afterAll(() => t.close());

  it.each([
    ['4242424242424242', '42424242', 'visa'],
    ['5555555555554444', '55555555', 'mastercard'],
    ['378282246310005', '378282', 'american-express'],
    ['6011111111111117', '601111', 'discover'],
    ['4000056655665556', '40000566', 'visa'],
  ])(
    'card %s: BIN %s kept (%s); enrichments.card_details show its first 6 digits and the last four, nothing more',
    async (number, bin, brand) => {
      const created = await card(number).expect(201);
      // 8 digits with the last four would leave a 16-digit number 4 unknown digits: answers show 6.
      const details = { bin: bin.slice(0, 6), last4: number.slice(-4), brand };
      expect(created.body.enrichments).toEqual({ card_details: details });
      const got = await request(t.http).get(`/tokens/${created.body.id}`).set('BT-API-KEY', key).expect(200);
      expect(got.body.enrichments).toEqual({ card_details: details });
      const [row]: { card_bin: string }[] = await t.app
        .get(DataSource)
        .query('SELECT card_bin FROM tokens WHERE id = $1', [created.body.id]);
      expect(row.card_bin).toBe(bin);
    },
  );

  it('composite tokenize answers carry enrichments; banks and plain tokens have none', async () => {
    const res = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .send({
        card: {
          type: 'card',
          data: { number: '4242424242424242', expiration_month: 1, expiration_year: 2031 },
        },
        bank: { type: 'bank', data: { routing_number: '110000000', account_number: '000123456789' } },
        plain: { type: 'token', data: 'hello' },
      })
      .expect(201);
    expect(res.body.card.enrichments.card_details).toMatchObject({ bin: '424242', last4: '4242' });
    expect(res.body.bank.enrichments).toBeUndefined();
    expect(res.body.plain.enrichments).toBeUndefined();
  });

  it.each([
    ['2030-01-02T10:15:30Z', '2030-01-02T10:15:30.000Z'],
    ['2030-01-02T10:15:30.123456Z', '2030-01-02T10:15:30.123Z'],
    ['2030-01-02T10:15', '2030-01-02T10:15:00.000Z'],
    ['2030-01-02T10:15:30+02:00', '2030-01-02T08:15:30.000Z'],
    ['2030-01-02T10:15:30-0530', '2030-01-02T15:45:30.000Z'],
    ['2030-01-02', '2030-01-02T00:00:00.000Z'],
  ])('expires_at %s is stored and returned as %s', async (input, expected) => {
    const created = await tokenize({ type: 'token', data: 'x', expires_at: input }).expect(201);
    expect(created.body.expires_at).toBe(expected);
    const patched = await request(t.http)
      .patch(`/tokens/${created.body.id}`)
      .set('BT-API-KEY', key)
      .set('Content-Type', 'application/merge-patch+json')
      .send({ expires_at: input.replace('2030', '2031') })
      .expect(200);
    expect(patched.body.expires_at).toBe(expected.replace('2030', '2031'));
  });

  it.each(['2030-02-30', '2030-01-02 10:15Z', '2030-01-02T25:00Z', 'next week', '2030-01-02T10:15+15:00'])(
    'expires_at %s is a 400 naming the field',
    async (input) => {
      const res = await tokenize({ type: 'token', data: 'x', expires_at: input });
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toEqual(['expires_at']);
    },
  );

  it('log date filters take the same forms: dates, offsets, no zone as UTC; others are a 400 naming the field', async () => {
    const logs = (query: Record<string, string>) =>
      request(t.http).get('/logs').set('BT-API-KEY', managementKey).query(query);
    const all = (await logs({ entity_type: 'token', size: '100' }).expect(200)).body.data as {
      created_at: string;
    }[];
    expect(all.length).toBeGreaterThan(0);
    const today = new Date().toISOString().slice(0, 10);
    expect((await logs({ start_date: today, size: '100' }).expect(200)).body.data.length).toBeGreaterThan(0);
    expect((await logs({ end_date: '2000-01-01', size: '100' }).expect(200)).body.data).toEqual([]);
    const first = new Date(all[all.length - 1].created_at);
    const plusTwo = new Date(first.getTime() + 2 * 3_600_000).toISOString().replace(/\.\d+Z$/, '+02:00');
    const sameInstant = await logs({ start_date: plusTwo, size: '100' }).expect(200);
    expect(sameInstant.body.data.length).toBeGreaterThan(0);
    for (const bad of ['2026-13-01', 'yesterday', '2026-11-24 10:00'])
      for (const field of ['start_date', 'end_date']) {
        const res = await logs({ [field]: bad });
        expectProblem(res, 400);
        expect(Object.keys(res.body.errors)).toEqual([field]);
      }
  });

  it('log entity types: card and bank select the rows of tokens of that type, deleted ones included', async () => {
    const cardId = (await card('4242424242424242').expect(201)).body.id as string;
    const bankId = (
      await tokenize({
        type: 'bank',
        data: { routing_number: '110000000', account_number: '000123456789' },
      }).expect(201)
    ).body.id as string;
    const plainId = (await tokenize({ type: 'token', data: 'x' }).expect(201)).body.id as string;
    await request(t.http).get(`/tokens/${cardId}`).set('BT-API-KEY', key).expect(200);
    await request(t.http)
      .patch(`/tokens/${bankId}`)
      .set('BT-API-KEY', key)
      .set('Content-Type', 'application/merge-patch+json')
      .send({ metadata: { a: 'b' } })
      .expect(200);
    await request(t.http).delete(`/tokens/${cardId}`).set('BT-API-KEY', key).expect(204);
    const rows = async (entity_type: string, entity_id: string) =>
      (
        await request(t.http)
          .get('/logs')
          .set('BT-API-KEY', managementKey)
          .query({ entity_type, entity_id, size: 100 })
          .expect(200)
      ).body.data.map(
        (row: { operation: string; entity_type: string }) => `${row.entity_type}:${row.operation}`,
      );
    expect((await rows('card', cardId)).sort()).toEqual(['token:create', 'token:delete', 'token:read']);
    expect((await rows('token', cardId)).sort()).toEqual(['token:create', 'token:delete', 'token:read']);
    expect(await rows('bank', cardId)).toEqual([]);
    expect((await rows('bank', bankId)).sort()).toEqual(['token:create', 'token:update']);
    expect(await rows('card', plainId)).toEqual([]);
    const types = await request(t.http)
      .get('/logs/entity-types')
      .set('BT-API-KEY', managementKey)
      .expect(200);
    expect(types.body.map((type: { value: string }) => type.value)).toEqual([
      'token',
      'card',
      'bank',
      'network_token',
      'application',
      'tenant',
      'session',
      'connection',
      'transaction',
      'proxy',
      'webhook',
      'flow_rule',
      'buyer',
      'wallet_key',
      'relay_refund',
      'token_import',
    ]);
    expectProblem(
      await request(t.http).get('/logs').set('BT-API-KEY', managementKey).query({ entity_type: 'cards' }),
      400,
    );
  });
});
