import request from 'supertest';
import { DataSource } from 'typeorm';
import { TenantKeysService } from '../src/common/crypto/tenant-keys.service';
import { Clock } from '../src/common/jobs/clock';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { luhnCard } from './support/attacker';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { createWebhookRow } from './support/webhooks';

const BUYERS = '/orchestration/buyers';
const BUYER_PERMISSIONS = [
  'orchestration:buyers:read',
  'orchestration:buyers:create',
  'orchestration:buyers:update',
  'orchestration:buyers:delete',
];
const UNKNOWN = '00000000-0000-4000-8000-00000000abcd';

/** A problem naming `field` among its errors. */
function expectField(res: request.Response, status: number, field: string): void {
  expectProblem(res, status);
  expect(Object.keys(res.body.errors ?? {})).toContain(field);
}

interface Method {
  id: string;
  last_used_at: string | null;
  [field: string]: unknown;
}

/** Buyers and their stored cards (`/orchestration/buyers`), and transactions made for a buyer. */
describe('buyers and stored cards', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let key: string;
  let connection: string;
  let webhookId: string;

  beforeAll(async () => {
    // No scheduled jobs: one firing while a test below has moved the clock on 40 days would purge other
    // files' rows in the shared database (their CVCs, sessions, idempotency records).
    t = await startApp({ JOBS_ENABLED: 'false' });
    db = t.app.get(DataSource);
    tenant = await newTenant(t, 'buyers');
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: [...ORCHESTRATION_PERMISSIONS, ...BUYER_PERMISSIONS, 'token:delete'],
      })
    ).key;
    connection = (await newConnection(t, key, { currencies: ['USD'], countries: ['US'] })).id;
    webhookId = (
      await createWebhookRow(db, t.app.get(TenantKeysService), tenant.tenantId, {
        url: 'https://receiver.example/hook',
        events: ['buyer:created', 'buyer:updated', 'buyer:deleted'],
      })
    ).id;
  });
  afterAll(() => t.close());

  const call = (method: 'get' | 'post' | 'put' | 'delete', path: string, apiKey = key, body?: object) => {
    const req = request(t.http)[method](path).set('BT-API-KEY', apiKey);
    return body === undefined ? req : req.send(body);
  };
  const createBuyer = (body: Record<string, unknown> = {}, apiKey = key) =>
    call('post', BUYERS, apiKey, body);
  const newBuyer = async (body: Record<string, unknown> = {}) =>
    (await createBuyer(body).expect(201)).body as { id: string; [field: string]: unknown };
  const list = (query: Record<string, unknown> = {}, apiKey = key) =>
    request(t.http).get(BUYERS).query(query).set('BT-API-KEY', apiKey);
  const cardToken = async (number = luhnCard(), month = 12, year = 2030): Promise<string> =>
    (
      await call('post', '/tokenize', key, {
        type: 'card',
        data: { number, expiration_month: month, expiration_year: year, cvc: '123' },
      }).expect(201)
    ).body.id;
  const attach = (buyer: string, token: string, apiKey = key) =>
    call('post', `${BUYERS}/${buyer}/payment-methods`, apiKey, { token });
  const methods = async (buyer: string): Promise<Method[]> =>
    (await call('get', `${BUYERS}/${buyer}/payment-methods`).expect(200)).body as Method[];
  const pay = (body: Record<string, unknown>, apiKey = key) =>
    call('post', '/orchestration/transactions', apiKey, {
      amount: 1000,
      currency: 'USD',
      connection_id: connection,
      ...body,
    });
  const count = async (table: string): Promise<number> =>
    (await db.query(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [tenant.tenantId]))[0].n;

  describe('buyers', () => {
    it('POST creates a buyer (201) with type, id, both names and times; GET answers the same; names are optional', async () => {
      const res = await createBuyer({ external_identifier: 'cus-1', display_name: 'Ada Lovelace' }).expect(
        201,
      );
      expect(res.body).toEqual({
        type: 'buyer',
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        external_identifier: 'cus-1',
        display_name: 'Ada Lovelace',
        created_at: expect.any(String),
        updated_at: res.body.created_at,
      });
      expect((await call('get', `${BUYERS}/${res.body.id}`).expect(200)).body).toEqual(res.body);
      const bare = await createBuyer({}).expect(201);
      expect(bare.body).toMatchObject({ external_identifier: null, display_name: null });
    });

    it('each name takes 1 to 200 characters: 0 or 201 is a 400 naming the field, on create and update', async () => {
      const buyer = await newBuyer();
      const before = await count('buyers');
      for (const field of ['external_identifier', 'display_name'])
        for (const value of ['', 'x'.repeat(201)]) {
          expectField(await createBuyer({ [field]: value }), 400, field);
          expectField(await call('put', `${BUYERS}/${buyer.id}`, key, { [field]: value }), 400, field);
        }
      expect(await count('buyers')).toBe(before);
      const long = await newBuyer({ external_identifier: 'e'.repeat(200), display_name: 'd'.repeat(200) });
      expect(long.display_name).toBe('d'.repeat(200));
    });

    it('a second buyer with the same external_identifier in the tenant is a 409 conflict; another tenant may use it', async () => {
      await newBuyer({ external_identifier: 'dup-1' });
      const before = await count('buyers');
      const again = await createBuyer({ external_identifier: 'dup-1', display_name: 'other' });
      expectProblem(again, 409);
      expect(again.body.code).toBe('conflict');
      expect(await count('buyers')).toBe(before);
      const other = await newTenant(t, 'buyers-other');
      const otherKey = (
        await newApplication(t, other.managementKey, { type: 'private', permissions: BUYER_PERMISSIONS })
      ).key;
      await createBuyer({ external_identifier: 'dup-1' }, otherKey).expect(201);
    });

    it('GET lists newest first with pagination; external_identifier filters exactly; size over 100 is a 400', async () => {
      const own = await newTenant(t, 'buyers-list');
      const k = (
        await newApplication(t, own.managementKey, { type: 'private', permissions: BUYER_PERMISSIONS })
      ).key;
      const ids: string[] = [];
      for (const n of [1, 2, 3]) {
        ids.push((await createBuyer({ external_identifier: `list-${n}` }, k).expect(201)).body.id);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const first = await list({ size: 2 }, k).expect(200);
      expect(first.body.pagination).toEqual({
        total_items: 3,
        page_number: 1,
        page_size: 2,
        total_pages: 2,
      });
      expect(first.body.data.map((b: { id: string }) => b.id)).toEqual([ids[2], ids[1]]);
      const second = await list({ size: 2, page: 2 }, k).expect(200);
      expect(second.body.data.map((b: { id: string }) => b.id)).toEqual([ids[0]]);
      const exact = await list({ external_identifier: 'list-2' }, k).expect(200);
      expect(exact.body.data.map((b: { id: string }) => b.id)).toEqual([ids[1]]);
      expect((await list({ external_identifier: 'list-' }, k).expect(200)).body.data).toEqual([]);
      expectField(await list({ size: 101 }, k), 400, 'size');
    });

    it('search matches the start of display_name or external_identifier in any case; % and _ are literal', async () => {
      const own = await newTenant(t, 'buyers-search');
      const k = (
        await newApplication(t, own.managementKey, { type: 'private', permissions: BUYER_PERMISSIONS })
      ).key;
      const make = async (body: Record<string, string>) => (await createBuyer(body, k).expect(201)).body.id;
      const ada = await make({ display_name: 'Ada Lovelace', external_identifier: 'c-1' });
      const grace = await make({ display_name: 'Grace Hopper', external_identifier: 'ADA_x' });
      const percent = await make({ display_name: '100% Hopper', external_identifier: 'c-3' });
      const plain = await make({ display_name: '1000 Hopper', external_identifier: 'ADAYx' });
      const found = async (search: string) =>
        ((await list({ search }, k).expect(200)).body.data as { id: string }[]).map((b) => b.id).sort();
      expect(await found('ada')).toEqual([ada, grace, plain].sort());
      expect(await found('ADA L')).toEqual([ada]);
      expect(await found('love')).toEqual([]);
      expect(await found('hopper')).toEqual([]);
      expect(await found('100%')).toEqual([percent]);
      expect(await found('%')).toEqual([]);
      expect(await found('ada_')).toEqual([grace]);
      expect(await found('_')).toEqual([]);
    });

    it('PUT: a field left out keeps its value, null clears it; a taken external_identifier is a 409', async () => {
      const buyer = await newBuyer({ external_identifier: 'put-1', display_name: 'Before' });
      await newBuyer({ external_identifier: 'put-taken' });
      await new Promise((resolve) => setTimeout(resolve, 5));
      const renamed = await call('put', `${BUYERS}/${buyer.id}`, key, { display_name: 'After' }).expect(200);
      expect(renamed.body).toMatchObject({
        id: buyer.id,
        external_identifier: 'put-1',
        display_name: 'After',
      });
      expect(renamed.body.created_at).toBe(buyer.created_at);
      expect(renamed.body.updated_at > (buyer.updated_at as string)).toBe(true);
      const cleared = await call('put', `${BUYERS}/${buyer.id}`, key, { external_identifier: null });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toMatchObject({ external_identifier: null, display_name: 'After' });
      const taken = await call('put', `${BUYERS}/${buyer.id}`, key, { external_identifier: 'put-taken' });
      expectProblem(taken, 409);
      expect(taken.body.code).toBe('conflict');
      expect((await call('get', `${BUYERS}/${buyer.id}`).expect(200)).body).toMatchObject({
        external_identifier: null,
        display_name: 'After',
      });
    });

    it('concurrent writes of one external_identifier: exactly one succeeds, the others are 409 (never a 500)', async () => {
      const creates = await Promise.all(
        Array.from({ length: 6 }, () => createBuyer({ external_identifier: 'race-1' })),
      );
      expect(creates.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
      const renamed = await Promise.all(
        [await newBuyer(), await newBuyer(), await newBuyer()].map((b) =>
          call('put', `${BUYERS}/${b.id}`, key, { external_identifier: 'race-2' }),
        ),
      );
      expect(renamed.map((r) => r.status).sort()).toEqual([200, 409, 409]);
      expect((await list({ external_identifier: 'race-2' }).expect(200)).body.data).toHaveLength(1);
    });

    it('a non-uuid or unknown id is a 404 on every buyer route', async () => {
      const token = await cardToken();
      for (const id of ['not-a-uuid', UNKNOWN]) {
        expectProblem(await call('get', `${BUYERS}/${id}`), 404);
        expectProblem(await call('put', `${BUYERS}/${id}`, key, { display_name: 'x' }), 404);
        expectProblem(await call('delete', `${BUYERS}/${id}`), 404);
        expectProblem(await attach(id, token), 404);
        expectProblem(await call('get', `${BUYERS}/${id}/payment-methods`), 404);
        expectProblem(await call('delete', `${BUYERS}/${id}/payment-methods/${token}`), 404);
      }
    });

    it('DELETE: 204; its cards are detached, the tokens stay, its transactions keep showing it', async () => {
      const buyer = await newBuyer({ external_identifier: 'del-1', display_name: 'Gone' });
      const token = await cardToken();
      await attach(buyer.id, token).expect(201);
      const tx = await pay({ buyer_id: buyer.id }).expect(201);
      await call('delete', `${BUYERS}/${buyer.id}`).expect(204);
      expectProblem(await call('get', `${BUYERS}/${buyer.id}`), 404);
      expectProblem(await call('delete', `${BUYERS}/${buyer.id}`), 404);
      await call('get', `/tokens/${token}`).expect(200);
      expect(
        await db.query('SELECT 1 FROM buyer_payment_methods WHERE tenant_id = $1 AND token_id = $2', [
          tenant.tenantId,
          token,
        ]),
      ).toEqual([]);
      const shown = { id: buyer.id, external_identifier: 'del-1', display_name: 'Gone' };
      expect((await call('get', `/orchestration/transactions/${tx.body.id}`).expect(200)).body.buyer).toEqual(
        shown,
      );
      const listed = await request(t.http)
        .get('/orchestration/transactions')
        .query({ buyer_id: buyer.id })
        .set('BT-API-KEY', key)
        .expect(200);
      expect(listed.body.data.map((x: { id: string; buyer: unknown }) => [x.id, x.buyer])).toEqual([
        [tx.body.id, shown],
      ]);
      // The card is free again: another buyer may store it.
      await attach((await newBuyer()).id, token).expect(201);
    });

    it('each route refuses (403) a private key lacking its permission, and the management key', async () => {
      const buyer = await newBuyer({ display_name: 'Guarded' });
      const token = await cardToken();
      await attach(buyer.id, token).expect(201);
      const lacking = async (permission: string) =>
        (
          await newApplication(t, tenant.managementKey, {
            type: 'private',
            permissions: [...BUYER_PERMISSIONS.filter((p) => p !== permission), 'token:use'],
          })
        ).key;
      const [noRead, noCreate, noUpdate, noDelete] = await Promise.all(BUYER_PERMISSIONS.map(lacking));
      const refused = [
        list({}, noRead),
        call('get', `${BUYERS}/${buyer.id}`, noRead),
        call('get', `${BUYERS}/${buyer.id}/payment-methods`, noRead),
        createBuyer({}, noCreate),
        call('put', `${BUYERS}/${buyer.id}`, noUpdate, { display_name: 'x' }),
        attach(buyer.id, token, noUpdate),
        call('delete', `${BUYERS}/${buyer.id}/payment-methods/${token}`, noUpdate),
        call('delete', `${BUYERS}/${buyer.id}`, noDelete),
      ];
      for (const res of await Promise.all(refused)) expectProblem(res, 403);
      const management = tenant.managementKey;
      expectProblem(await list({}, management), 403);
      expectProblem(await createBuyer({}, management), 403);
      expect((await call('get', `${BUYERS}/${buyer.id}`).expect(200)).body.display_name).toBe('Guarded');
      expect((await methods(buyer.id)).map((m) => m.id)).toEqual([token]);
    });

    it('the buyers permissions are for private applications only: a management or public one is a 400', async () => {
      for (const type of ['management', 'public'])
        for (const permission of BUYER_PERMISSIONS) {
          const res = await call('post', '/applications', tenant.managementKey, {
            name: 'no',
            type,
            permissions: [permission],
          });
          expectProblem(res, 400);
        }
    });

    it('writes and reads are audited as buyer; /logs/entity-types lists buyer', async () => {
      const buyer = await newBuyer({ display_name: 'Audited' });
      await call('get', `${BUYERS}/${buyer.id}`).expect(200);
      await call('put', `${BUYERS}/${buyer.id}`, key, { display_name: 'Audited 2' }).expect(200);
      await attach(buyer.id, await cardToken()).expect(201);
      await call('delete', `${BUYERS}/${buyer.id}`).expect(204);
      const logs = await request(t.http)
        .get('/logs')
        .query({ entity_type: 'buyer', entity_id: buyer.id })
        .set('BT-API-KEY', tenant.managementKey)
        .expect(200);
      const operations = (logs.body.data as { operation: string }[]).map((l) => l.operation);
      expect(operations).toEqual(expect.arrayContaining(['create', 'read', 'update', 'delete']));
      const types = await call('get', '/logs/entity-types', tenant.managementKey).expect(200);
      expect(types.body).toEqual(expect.arrayContaining([expect.objectContaining({ value: 'buyer' })]));
    });

    it('webhook events buyer:created, buyer:updated, buyer:deleted carry the buyer as GET answers it', async () => {
      const buyer = await newBuyer({ external_identifier: 'hook-1', display_name: 'Hooked' });
      const created = (await call('get', `${BUYERS}/${buyer.id}`).expect(200)).body;
      const updated = (
        await call('put', `${BUYERS}/${buyer.id}`, key, { display_name: 'Hooked 2' }).expect(200)
      ).body;
      await call('delete', `${BUYERS}/${buyer.id}`).expect(204);
      const events = await db.query(
        `SELECT e.type, e.entity_id, e.data FROM webhook_deliveries d
           JOIN webhook_events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
          WHERE d.tenant_id = $1 AND d.webhook_id = $2 AND e.entity_id = $3 ORDER BY d.seq`,
        [tenant.tenantId, webhookId, buyer.id],
      );
      expect(events).toEqual([
        { type: 'buyer:created', entity_id: buyer.id, data: created },
        { type: 'buyer:updated', entity_id: buyer.id, data: updated },
        { type: 'buyer:deleted', entity_id: buyer.id, data: updated },
      ]);
    });
  });

  describe('stored cards', () => {
    it('POST stores a card token (201): the payment method, shown by the list', async () => {
      const buyer = await newBuyer();
      const token = await cardToken('4111111111111111', 7, 2031);
      const res = await attach(buyer.id, token).expect(201);
      expect(res.body).toEqual({
        type: 'payment-method',
        id: token,
        method: 'card',
        buyer_id: buyer.id,
        scheme: 'visa',
        label: '1111',
        expiration_date: '07/31',
        status: 'active',
        created_at: expect.any(String),
        last_used_at: null,
        connection_tokens: [],
      });
      expect(await methods(buyer.id)).toEqual([res.body]);
    });

    it('the same card again answers the stored one with 200 (another token of it, or the same token); no duplicate', async () => {
      const buyer = await newBuyer();
      const number = luhnCard('5');
      const token = await cardToken(number);
      const first = await attach(buyer.id, token).expect(201);
      const same = await attach(buyer.id, token);
      expect(same.status).toBe(200);
      expect(same.body).toEqual(first.body);
      const copy = await cardToken(number);
      expect(copy).not.toBe(token);
      const again = await attach(buyer.id, copy);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect((await methods(buyer.id)).map((m) => m.id)).toEqual([token]);
    });

    it('a token stored for another buyer is a 409; nothing moves', async () => {
      const [a, b] = [await newBuyer(), await newBuyer()];
      const token = await cardToken();
      await attach(a.id, token).expect(201);
      const res = await attach(b.id, token);
      expectProblem(res, 409);
      expect(res.body.code).toBe('conflict');
      expect((await methods(a.id)).map((m) => m.id)).toEqual([token]);
      expect(await methods(b.id)).toEqual([]);
    });

    it('concurrent stores: copies of one card for one buyer store one (201, then 200); one token for two buyers, one (201, 409)', async () => {
      const buyer = await newBuyer();
      const number = luhnCard();
      const copies = [await cardToken(number), await cardToken(number), await cardToken(number)];
      const stored = await Promise.all(copies.map((token) => attach(buyer.id, token)));
      expect(stored.map((r) => r.status).sort()).toEqual([200, 200, 201]);
      const winner = stored.find((r) => r.status === 201)!.body.id;
      expect(stored.map((r) => r.body.id)).toEqual([winner, winner, winner]);
      expect((await methods(buyer.id)).map((m) => m.id)).toEqual([winner]);
      const token = await cardToken();
      const [a, b] = [await newBuyer(), await newBuyer()];
      const both = await Promise.all([attach(a.id, token), attach(b.id, token)]);
      expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
      expect([...(await methods(a.id)), ...(await methods(b.id))].map((m) => m.id)).toEqual([token]);
    });

    it('a non-card token or an unknown token is a 400 naming token; an unknown buyer is a 404', async () => {
      const buyer = await newBuyer();
      const plain = (await call('post', '/tokenize', key, { type: 'token', data: 'not a card' }).expect(201))
        .body.id;
      expectField(await attach(buyer.id, plain), 400, 'token');
      expectField(await attach(buyer.id, 'no-such-token'), 400, 'token');
      expectField(await attach(buyer.id, UNKNOWN), 400, 'token');
      expectProblem(await attach(UNKNOWN, await cardToken()), 404);
      expect(await methods(buyer.id)).toEqual([]);
    });

    it('a stored card whose expiry month has passed is shown as expired (tokenize refuses an expired card)', async () => {
      const expired = { number: luhnCard(), expiration_month: 1, expiration_year: 2020 };
      expectField(
        await call('post', '/tokenize', key, { type: 'card', data: expired }),
        400,
        'data.expiration_year',
      );
      // So the clock moves on instead.
      const clock = t.app.get(Clock);
      const now = clock.now();
      const buyer = await newBuyer();
      const token = await cardToken(luhnCard(), now.getUTCMonth() + 1, now.getUTCFullYear());
      expect((await attach(buyer.id, token).expect(201)).body.status).toBe('active');
      clock.advance(40 * 24 * 3600 * 1000);
      try {
        expect((await methods(buyer.id)).map((m) => [m.id, m.status])).toEqual([[token, 'expired']]);
      } finally {
        clock.reset();
      }
    });

    it('GET lists most recently used first; never used: most recently added first; a decline is no use', async () => {
      const buyer = await newBuyer();
      const [a, b, c] = [await cardToken(), await cardToken(), await cardToken()];
      const d = await cardToken('4000000000000002');
      for (const token of [a, b, c, d]) {
        await attach(buyer.id, token).expect(201);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect((await methods(buyer.id)).map((m) => m.id)).toEqual([d, c, b, a]);
      const paid = await pay({ buyer_id: buyer.id, token: a }).expect(201);
      expect(paid.body.status).toBe('authorization_succeeded');
      const listed = await methods(buyer.id);
      expect(listed.map((m) => m.id)).toEqual([a, d, c, b]);
      expect(listed[0].last_used_at).toEqual(expect.any(String));
      expect(listed.slice(1).map((m) => m.last_used_at)).toEqual([null, null, null]);
      // A successful transaction with the stored token, even without buyer_id, marks it used too.
      await pay({ token: b }).expect(201);
      expect((await methods(buyer.id)).map((m) => m.id)).toEqual([b, a, d, c]);
      // A declined one does not.
      const declined = await pay({ buyer_id: buyer.id, token: d }).expect(201);
      expect(declined.body.status).toBe('authorization_declined');
      const after = await methods(buyer.id);
      expect(after.map((m) => [m.id, m.last_used_at === null])).toEqual([
        [b, false],
        [a, false],
        [d, true],
        [c, true],
      ]);
    });

    it('DELETE removes a stored card (204) and the token stays; an unknown one is a 404', async () => {
      const buyer = await newBuyer();
      const token = await cardToken();
      await attach(buyer.id, token).expect(201);
      await call('delete', `${BUYERS}/${buyer.id}/payment-methods/${token}`).expect(204);
      expect(await methods(buyer.id)).toEqual([]);
      await call('get', `/tokens/${token}`).expect(200);
      expectProblem(await call('delete', `${BUYERS}/${buyer.id}/payment-methods/${token}`), 404);
      expectProblem(await call('delete', `${BUYERS}/${buyer.id}/payment-methods/no-such-token`), 404);
      // Another buyer's stored card is not this buyer's to remove.
      const [owner, kept] = [await newBuyer(), await cardToken()];
      await attach(owner.id, kept).expect(201);
      expectProblem(await call('delete', `${BUYERS}/${buyer.id}/payment-methods/${kept}`), 404);
      expect((await methods(owner.id)).map((m) => m.id)).toEqual([kept]);
    });

    it("deleting the token removes it from its buyer's list", async () => {
      const buyer = await newBuyer();
      const [kept, gone] = [await cardToken(), await cardToken()];
      await attach(buyer.id, kept).expect(201);
      await attach(buyer.id, gone).expect(201);
      await call('delete', `/tokens/${gone}`).expect(204);
      expect((await methods(buyer.id)).map((m) => m.id)).toEqual([kept]);
    });
  });

  describe('transactions with buyers', () => {
    it('buyer_id without token charges its most recently used stored card, payment_source card_on_file', async () => {
      const buyer = await newBuyer({ external_identifier: 'tx-1', display_name: 'Payer' });
      const [older, newer] = [await cardToken(), await cardToken()];
      await attach(buyer.id, older).expect(201);
      await new Promise((resolve) => setTimeout(resolve, 5));
      await attach(buyer.id, newer).expect(201);
      const first = await pay({ buyer_id: buyer.id }).expect(201);
      expect(first.body).toMatchObject({
        status: 'authorization_succeeded',
        payment_source: 'card_on_file',
        payment_method: { id: newer },
        buyer: { id: buyer.id, external_identifier: 'tx-1', display_name: 'Payer' },
      });
      const withToken = await pay({ buyer_id: buyer.id, token: older }).expect(201);
      expect(withToken.body.payment_source).toBe('ecommerce');
      const next = await pay({ buyer_id: buyer.id }).expect(201);
      expect(next.body.payment_method.id).toBe(older);
      const explicit = await pay({ buyer_id: buyer.id, payment_source: 'recurring' }).expect(201);
      expect(explicit.body.payment_source).toBe('recurring');
    });

    it('no card to charge: a buyer without cards (token), an unknown buyer_id (buyer_id), neither (token); nothing created', async () => {
      const before = await count('transactions');
      expectField(await pay({ buyer_id: (await newBuyer()).id }), 400, 'token');
      expectField(await pay({ buyer_id: UNKNOWN }), 400, 'buyer_id');
      expectField(await pay({}), 400, 'token');
      expect(await count('transactions')).toBe(before);
    });

    it('buyer_id needs orchestration:buyers:read besides token:use (403)', async () => {
      const buyer = await newBuyer();
      const token = await cardToken();
      await attach(buyer.id, token).expect(201);
      const payer = (
        await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:use'] })
      ).key;
      const before = await count('transactions');
      expectProblem(await pay({ buyer_id: buyer.id }, payer), 403);
      expectProblem(await pay({ buyer_id: buyer.id, token }, payer), 403);
      expect(await count('transactions')).toBe(before);
      await pay({ token }, payer).expect(201);
    });

    it('a token not stored for the buyer needs store (400 token); store without buyer_id is a 400 naming store', async () => {
      const buyer = await newBuyer();
      const token = await cardToken();
      const before = await count('transactions');
      expectField(await pay({ buyer_id: buyer.id, token }), 400, 'token');
      expectField(await pay({ token, store: true }), 400, 'store');
      expect(await count('transactions')).toBe(before);
      expect(await methods(buyer.id)).toEqual([]);
    });

    it('a token stored for another buyer, without store, is a token not stored for this buyer: 400 naming token', async () => {
      const [buyer, owner] = [await newBuyer(), await newBuyer()];
      const theirs = await cardToken();
      await attach(owner.id, theirs).expect(201);
      const before = await count('transactions');
      expectField(await pay({ buyer_id: buyer.id, token: theirs }), 400, 'token');
      expect(await count('transactions')).toBe(before);
    });

    it('store: true stores the card once authorized, with last_used_at; a declined one stores nothing', async () => {
      const buyer = await newBuyer();
      const token = await cardToken();
      const paid = await pay({ buyer_id: buyer.id, token, store: true }).expect(201);
      expect(paid.body.status).toBe('authorization_succeeded');
      const [stored, ...rest] = await methods(buyer.id);
      expect(rest).toEqual([]);
      expect(stored).toMatchObject({ id: token, buyer_id: buyer.id, status: 'active' });
      expect(stored.last_used_at).toEqual(expect.any(String));
      const declined = await pay({
        buyer_id: buyer.id,
        token: await cardToken('4000000000000002'),
        store: true,
      }).expect(201);
      expect(declined.body.status).toBe('authorization_declined');
      expect((await methods(buyer.id)).map((m) => m.id)).toEqual([token]);
    });

    it("store: true writes the buyer's own audit row for the card stored (no card data); a duplicate or a decline writes none", async () => {
      const buyerLogs = async (id: string) =>
        (
          await request(t.http)
            .get('/logs')
            .query({ entity_type: 'buyer', entity_id: id })
            .set('BT-API-KEY', tenant.managementKey)
            .expect(200)
        ).body.data as { operation: string; message: string; entity_type: string; actor_id: string }[];
      const stores = async (id: string) =>
        (await buyerLogs(id)).filter((row) => row.message.startsWith('Payment method stored'));
      const buyer = await newBuyer();
      const number = luhnCard();
      const token = await cardToken(number);
      const paid = await pay({ buyer_id: buyer.id, token, store: true }).expect(201);
      expect(paid.body.status).toBe('authorization_succeeded');
      const [row, ...more] = await stores(buyer.id);
      expect(more).toEqual([]);
      expect(row).toMatchObject({
        entity_type: 'buyer',
        operation: 'update',
        message: `Payment method stored by transaction ${paid.body.id}`,
      });
      const logged = JSON.stringify(await buyerLogs(buyer.id));
      for (const secret of [number, '"123"']) expect(logged).not.toContain(secret);
      // Another copy of the card: nothing stored, no row; a declined payment: none either.
      await pay({ buyer_id: buyer.id, token: await cardToken(number), store: true }).expect(201);
      const declined = await pay({
        buyer_id: buyer.id,
        token: await cardToken('4000000000000002'),
        store: true,
      }).expect(201);
      expect(declined.body.status).toBe('authorization_declined');
      expect(await stores(buyer.id)).toHaveLength(1);
      // The transaction keeps its own rows.
      const txLogs = await request(t.http)
        .get('/logs')
        .query({ entity_type: 'transaction', entity_id: paid.body.id })
        .set('BT-API-KEY', tenant.managementKey)
        .expect(200);
      expect(txLogs.body.data.length).toBeGreaterThan(0);
    });

    it('store: true with another copy of a stored card adds no duplicate and marks the stored one used', async () => {
      const buyer = await newBuyer();
      const number = luhnCard();
      const [token, other] = [await cardToken(number), await cardToken()];
      await attach(buyer.id, token).expect(201);
      await new Promise((resolve) => setTimeout(resolve, 5));
      await attach(buyer.id, other).expect(201);
      const copy = await cardToken(number);
      await pay({ buyer_id: buyer.id, token: copy, store: true }).expect(201);
      const listed = await methods(buyer.id);
      expect(listed.map((m) => m.id)).toEqual([token, other]);
      expect(listed[0].last_used_at).toEqual(expect.any(String));
    });

    it('a transaction shows its buyer (null without one); ?buyer_id= lists only its transactions', async () => {
      const buyer = await newBuyer({ display_name: 'Listed' });
      const token = await cardToken();
      await attach(buyer.id, token).expect(201);
      const mine = await pay({ buyer_id: buyer.id }).expect(201);
      const none = await pay({ token: await cardToken() }).expect(201);
      expect(none.body.buyer).toBeNull();
      const listed = await request(t.http)
        .get('/orchestration/transactions')
        .query({ buyer_id: buyer.id })
        .set('BT-API-KEY', key)
        .expect(200);
      expect(listed.body.data.map((x: { id: string }) => x.id)).toEqual([mine.body.id]);
      expect(listed.body.data[0].buyer).toEqual({
        id: buyer.id,
        external_identifier: null,
        display_name: 'Listed',
      });
    });
  });
});
