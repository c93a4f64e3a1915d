import request from 'supertest';
import { DataSource } from 'typeorm';
import { FlowRulesService } from '../src/modules/orchestration/flows/flow-rules.service';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';

const RULES = '/orchestration/flows/card-transaction/actions';
const EVALUATE = '/orchestration/flows/card-transaction/evaluate';
const FLOW_PERMISSIONS = [
  ...ORCHESTRATION_PERMISSIONS,
  'orchestration:flows:read',
  'orchestration:flows:update',
];

/** A problem naming `field` among its errors. */
function expectField(res: request.Response, status: number, field: string): void {
  expectProblem(res, status);
  expect(Object.keys(res.body.errors ?? {})).toContain(field);
}

interface Rule {
  id: string;
  position: number;
  description: string;
  [field: string]: unknown;
}

/** Routing rules (docs/routing.md): CRUD and positions, validation, access, and how transactions use them. */
describe('routing rules', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let key: string;
  let stripe: string;
  let braintree: string;
  let checkout: string;

  beforeAll(async () => {
    t = await startApp();
    db = t.app.get(DataSource);
    tenant = await newTenant(t, 'routing');
    key = (await newApplication(t, tenant.managementKey, { type: 'private', permissions: FLOW_PERMISSIONS }))
      .key;
    const options = { currencies: ['USD', 'EUR'], countries: ['US', 'DE'] };
    stripe = (await newConnection(t, key, options)).id;
    braintree = (await newConnection(t, key, { ...options, formulaId: 'braintree-card' })).id;
    checkout = (await newConnection(t, key, { ...options, formulaId: 'checkout-card', currencies: ['EUR'] }))
      .id;
  });
  afterAll(() => t.close());

  const rules = (action = 'route-transaction', apiKey = key) =>
    request(t.http).get(`${RULES}/${action}/rules`).set('BT-API-KEY', apiKey);
  const createRule = (body: Record<string, unknown>, action = 'route-transaction', apiKey = key) =>
    request(t.http).post(`${RULES}/${action}/rules`).set('BT-API-KEY', apiKey).send(body);
  const route = (result: string[], conditions: unknown[] = [], extra: Record<string, unknown> = {}) => ({
    description: 'route',
    conditions,
    outcome: { type: 'list', result },
    ...extra,
  });
  const decline = (conditions: unknown[]) => ({
    description: 'decline',
    conditions,
    outcome: { type: 'boolean', result: true },
  });
  const clear = async () => {
    for (const action of ['route-transaction', 'decline-early'])
      for (const rule of (await rules(action).expect(200)).body as Rule[])
        await request(t.http)
          .delete(`${RULES}/${action}/rules/${rule.id}`)
          .set('BT-API-KEY', key)
          .expect(204);
  };
  const cardToken = async (number: string, apiKey = key): Promise<string> =>
    (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', apiKey)
        .send({ type: 'card', data: { number, expiration_month: 12, expiration_year: 2030, cvc: '123' } })
        .expect(201)
    ).body.id;
  const pay = (body: Record<string, unknown>, apiKey = key) =>
    request(t.http).post('/orchestration/transactions').set('BT-API-KEY', apiKey).send(body);
  /** The tenant's transactions (the other Jest worker's files make theirs in the same database meanwhile). */
  const count = async () =>
    Number(
      (await db.query('SELECT count(*) AS n FROM transactions WHERE tenant_id = $1', [tenant.tenantId]))[0]
        .n as string,
    );

  describe('positions', () => {
    afterAll(clear);

    it('a rule without position goes last; with one it is inserted and the rest move down; positions stay 1..n', async () => {
      const a = (await createRule(route([stripe], [], { description: 'a' })).expect(201)).body as Rule;
      const b = (await createRule(route([stripe], [], { description: 'b' })).expect(201)).body as Rule;
      const c = (await createRule(route([stripe], [], { description: 'c', position: 1 })).expect(201))
        .body as Rule;
      expect([a.position, b.position, c.position]).toEqual([1, 2, 1]);
      expect(c).toMatchObject({
        type: 'rule',
        flow: 'card-transaction',
        action: 'route-transaction',
        conditions: [],
        outcome: { type: 'list', result: [stripe] },
      });
      const listed = (await rules().expect(200)).body as Rule[];
      expect(listed.map((r) => [r.description, r.position])).toEqual([
        ['c', 1],
        ['a', 2],
        ['b', 3],
      ]);

      // Moving c from 1 to 3 renumbers the others; moving it back to 2 too.
      await request(t.http)
        .put(`${RULES}/route-transaction/rules/${c.id}`)
        .set('BT-API-KEY', key)
        .send(route([braintree], [], { description: 'c2', position: 3 }))
        .expect(200);
      expect(((await rules().expect(200)).body as Rule[]).map((r) => r.description)).toEqual([
        'a',
        'b',
        'c2',
      ]);
      const moved = await request(t.http)
        .put(`${RULES}/route-transaction/rules/${c.id}`)
        .set('BT-API-KEY', key)
        .send(route([braintree], [], { description: 'c3', position: 2 }))
        .expect(200);
      expect(moved.body).toMatchObject({ position: 2, outcome: { result: [braintree] } });
      expect(((await rules().expect(200)).body as Rule[]).map((r) => r.description)).toEqual([
        'a',
        'c3',
        'b',
      ]);

      // Deleting closes the gap.
      await request(t.http)
        .delete(`${RULES}/route-transaction/rules/${a.id}`)
        .set('BT-API-KEY', key)
        .expect(204);
      expect(((await rules().expect(200)).body as Rule[]).map((r) => [r.description, r.position])).toEqual([
        ['c3', 1],
        ['b', 2],
      ]);
      const got = await request(t.http)
        .get(`${RULES}/route-transaction/rules/${b.id}`)
        .set('BT-API-KEY', key);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({ id: b.id, position: 2 });
      // The actions keep separate orders.
      expect((await rules('decline-early').expect(200)).body).toEqual([]);
    });

    it('a position outside 1..n+1 (create) or 1..n (update, where it is required) is a 400 naming position', async () => {
      const n = ((await rules().expect(200)).body as Rule[]).length;
      for (const position of [0, n + 2, -1])
        expectField(await createRule(route([stripe], [], { position })), 400, 'position');
      expectField(await createRule(route([stripe], [], { position: 1.5 })), 400, 'position');
      const [first] = (await rules().expect(200)).body as Rule[];
      const put = (body: Record<string, unknown>) =>
        request(t.http).put(`${RULES}/route-transaction/rules/${first.id}`).set('BT-API-KEY', key).send(body);
      expectField(await put(route([stripe])), 400, 'position');
      expectField(await put(route([stripe], [], { position: n + 1 })), 400, 'position');
      expect(((await rules().expect(200)).body as Rule[]).length).toBe(n);
    });

    it('concurrent moves and inserts keep positions 1..n, and every read sees a whole order', async () => {
      const created: Rule[] = [];
      for (let i = 0; i < 6; i++)
        created.push(
          (await createRule(route([stripe], [], { description: `r${i}` })).expect(201)).body as Rule,
        );
      const wholeOrders: boolean[] = [];
      let reading = true;
      const reader = (async () => {
        while (reading) {
          const listed = (await rules().expect(200)).body as Rule[];
          wholeOrders.push(listed.every((r, i) => r.position === i + 1));
        }
      })();
      await Promise.all([
        ...created.map((rule, i) =>
          request(t.http)
            .put(`${RULES}/route-transaction/rules/${rule.id}`)
            .set('BT-API-KEY', key)
            .send(route([stripe], [], { description: rule.description, position: ((i * 5) % 6) + 1 }))
            .expect(200),
        ),
        createRule(route([stripe], [], { description: 'new', position: 1 })).expect(201),
      ]);
      reading = false;
      await reader;
      const listed = (await rules().expect(200)).body as Rule[];
      expect(listed.map((r) => r.position)).toEqual(listed.map((_, i) => i + 1));
      expect(wholeOrders.length).toBeGreaterThan(0);
      expect(wholeOrders.every(Boolean)).toBe(true);
    });
  });

  describe('validation', () => {
    it('names each bad condition, the outcome and the description', async () => {
      const res = await createRule(
        route(
          [stripe],
          [
            { name: 'currency', operator: 'is_one_of', value: ['USD'] },
            { name: 'bin', operator: 'is_one_of', value: ['4'] },
            { name: 'amount', operator: 'is_between', value: { currency: 'USD' } },
            { name: 'card_bin', operator: 'is_one_of', value: ['50-4'] },
          ],
        ),
      );
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors).sort()).toEqual([
        'conditions[1]',
        'conditions[2]',
        'conditions[3]',
      ]);
      expectField(
        await createRule(
          route([stripe], Array(11).fill({ name: 'intent', operator: 'is_one_of', value: ['capture'] })),
        ),
        400,
        'conditions',
      );
      expectField(await createRule({ ...route([stripe]), description: '' }), 400, 'description');
      expectField(await createRule({ ...route([stripe]), conditions: 'x' }), 400, 'conditions');
      expectField(
        await createRule({ ...route([stripe]), outcome: { type: 'boolean', result: true } }),
        400,
        'outcome',
      );
      expectField(await createRule(decline([]), 'route-transaction'), 400, 'outcome');
      expectField(await createRule(route([stripe]), 'decline-early'), 400, 'outcome');
      expectField(await createRule(route([])), 400, 'outcome.result');
      expectField(await createRule(route([stripe, stripe])), 400, 'outcome.result');
      expectField(
        await createRule(
          route(
            [stripe, braintree, checkout, stripe, braintree, checkout].map((id, i) =>
              i < 3 ? id : `${id.slice(0, -1)}${i}`,
            ),
          ),
        ),
        400,
        'outcome.result',
      );
      const unknown = await createRule(route([stripe, '00000000-0000-4000-8000-000000000000', 'nope']));
      expectProblem(unknown, 400);
      expect(Object.keys(unknown.body.errors).sort()).toEqual(['outcome.result[1]', 'outcome.result[2]']);
      expect((await rules().expect(200)).body).toEqual([]);
    });

    it('card_bin takes prefixes and ranges of 1 to 6 digits only: 7 or 8 are a 400 naming the condition, on create and update', async () => {
      const bins = (value: string[]) => [
        { name: 'currency', operator: 'is_one_of', value: ['USD'] },
        { name: 'card_bin', operator: 'is_one_of', value },
      ];
      for (const value of [['4242424'], ['42424242'], ['4', '4000000-4999999'], ['42424200-42424299']]) {
        const res = await createRule(route([stripe], bins(value)));
        expectProblem(res, 400);
        expect(Object.keys(res.body.errors)).toEqual(['conditions[1]']);
        expect(res.body.errors['conditions[1]'].join(' ')).toContain('1 to 6 digits');
        // The error names the condition; it never echoes the digits sent.
        expect(JSON.stringify(res.body)).not.toContain(value.at(-1));
      }
      const kept = (await createRule(route([stripe], bins(['424242', '400000-499999']))).expect(201))
        .body as Rule;
      expect(kept.conditions).toEqual(bins(['424242', '400000-499999']));
      const update = (value: string[]) =>
        request(t.http)
          .put(`${RULES}/route-transaction/rules/${kept.id}`)
          .set('BT-API-KEY', key)
          .send(route([stripe], bins(value), { position: 1 }));
      expectField(await update(['42424242']), 400, 'conditions[1]');
      expectField(await update(['4242420-4242429']), 400, 'conditions[1]');
      expect((await update(['4-4']).expect(200)).body.conditions[1].value).toEqual(['4-4']);
      await clear();
    });

    it('an unknown action or flow is a 404', async () => {
      expect((await rules('route').expect(404)).body.code).toBe('not_found');
      await request(t.http)
        .get('/orchestration/flows/checkout/actions/route-transaction/rules')
        .set('BT-API-KEY', key)
        .expect(404);
    });

    it('an action holds at most 100 rules', async () => {
      for (let i = 0; i < 100; i++)
        await createRule(
          decline([{ name: 'intent', operator: 'is_one_of', value: ['capture'] }]),
          'decline-early',
        ).expect(201);
      expectField(await createRule(decline([]), 'decline-early'), 400, 'position');
      expect(((await rules('decline-early').expect(200)).body as Rule[]).length).toBe(100);
      await clear();
    });
  });

  describe('access', () => {
    let rule: Rule;
    beforeAll(async () => {
      rule = (await createRule(route([stripe], [], { description: 'kept' })).expect(201)).body as Rule;
    });
    afterAll(clear);

    it('needs orchestration:flows:read to read and evaluate, orchestration:flows:update to write', async () => {
      const reader = (
        await newApplication(t, tenant.managementKey, {
          type: 'private',
          permissions: ['orchestration:flows:read', 'token:use'],
        })
      ).key;
      const none = (
        await newApplication(t, tenant.managementKey, {
          type: 'private',
          permissions: ORCHESTRATION_PERMISSIONS,
        })
      ).key;
      expect((await rules('route-transaction', reader)).status).toBe(200);
      expectProblem(await createRule(route([stripe]), 'route-transaction', reader), 403);
      expectProblem(
        await request(t.http).delete(`${RULES}/route-transaction/rules/${rule.id}`).set('BT-API-KEY', reader),
        403,
      );
      expectProblem(await rules('route-transaction', none), 403);
      expectProblem(
        await request(t.http)
          .post(EVALUATE)
          .set('BT-API-KEY', none)
          .send({ amount: 1, currency: 'USD', token: rule.id }),
        403,
      );
      // Public applications cannot hold them.
      const pub = await request(t.http)
        .post('/applications')
        .set('BT-API-KEY', tenant.managementKey)
        .send({ name: 'pub', type: 'public', permissions: ['orchestration:flows:read'] });
      expect(pub.status).toBe(400);
    });

    it("the tenant's management key reads and writes rules (granted to management applications)", async () => {
      expect((await rules('route-transaction', tenant.managementKey)).status).toBe(200);
      expect((await rules('decline-early', tenant.managementKey)).status).toBe(200);
    });

    it("another tenant neither sees nor touches a rule, nor names this tenant's connection", async () => {
      const other = await newTenant(t, 'routing-other');
      const otherKey = (
        await newApplication(t, other.managementKey, { type: 'private', permissions: FLOW_PERMISSIONS })
      ).key;
      const path = `${RULES}/route-transaction/rules/${rule.id}`;
      expect((await rules('route-transaction', otherKey).expect(200)).body).toEqual([]);
      expectProblem(await request(t.http).get(path).set('BT-API-KEY', otherKey), 404);
      expectProblem(
        await request(t.http)
          .put(path)
          .set('BT-API-KEY', otherKey)
          .send(route([stripe], [], { position: 1 })),
        404,
      );
      expectField(await createRule(route([stripe]), 'route-transaction', otherKey), 400, 'outcome.result[0]');
      const ownConnection = (await newConnection(t, otherKey)).id;
      expectProblem(
        await request(t.http)
          .put(path)
          .set('BT-API-KEY', otherKey)
          .send(route([ownConnection], [], { position: 1 })),
        404,
      );
      expectProblem(await request(t.http).delete(path).set('BT-API-KEY', otherKey), 404);
      const kept = await request(t.http).get(path).set('BT-API-KEY', key).expect(200);
      expect(kept.body).toMatchObject({ description: 'kept', outcome: { result: [stripe] } });
      // Nor can it route its own transaction through this tenant's rule.
      const token = await cardToken('4242424242424242', otherKey);
      expectField(await pay({ amount: 100, currency: 'USD', token }, otherKey), 400, 'connection_id');
    });

    it('every write is audited as flow_rule; the entity type is listed', async () => {
      await request(t.http)
        .get(`${RULES}/route-transaction/rules/${rule.id}`)
        .set('BT-API-KEY', key)
        .expect(200);
      const logs = await request(t.http)
        .get('/logs')
        .query({ entity_type: 'flow_rule', entity_id: rule.id })
        .set('BT-API-KEY', tenant.managementKey)
        .expect(200);
      const operations = (logs.body.data as { operation: string }[]).map((l) => l.operation);
      expect(operations).toEqual(expect.arrayContaining(['create', 'read']));
      const types = await request(t.http)
        .get('/logs/entity-types')
        .set('BT-API-KEY', tenant.managementKey)
        .expect(200);
      expect(types.body).toEqual(expect.arrayContaining([{ display_name: 'Flow rule', value: 'flow_rule' }]));
    });
  });

  describe('transactions without connection_id', () => {
    afterEach(clear);

    it('the first matching route rule chooses; the transaction shows its connection', async () => {
      await createRule(
        route([braintree], [{ name: 'currency', operator: 'is_one_of', value: ['EUR'] }]),
      ).expect(201);
      await createRule(
        route([stripe, braintree], [{ name: 'card_bin', operator: 'is_one_of', value: ['424242'] }]),
      ).expect(201);
      await createRule(route([braintree])).expect(201);
      const visa = await cardToken('4242424242424242');
      const mastercard = await cardToken('5555555555554444');
      const usd = await pay({ amount: 1000, currency: 'USD', token: visa }).expect(201);
      expect(usd.body).toMatchObject({ status: 'authorization_succeeded', connection: { id: stripe } });
      const eur = await pay({
        amount: 1000,
        currency: 'EUR',
        token: await cardToken('4242424242424242'),
      }).expect(201);
      expect(eur.body.connection.id).toBe(braintree);
      const other = await pay({ amount: 1000, currency: 'USD', token: mastercard }).expect(201);
      expect(other.body.connection.id).toBe(braintree);
      // The BIN is never shown.
      expect(JSON.stringify(usd.body)).not.toContain('424242');
    });

    it('skips connections that cannot take the payment; none left or no rule: no_connection_available, nothing created', async () => {
      // checkout accepts EUR only: for USD the rule's second connection is used.
      await createRule(
        route(
          [checkout, stripe],
          [{ name: 'amount', operator: 'is_between', value: { currency: 'USD', max: 5000 } }],
        ),
      ).expect(201);
      await createRule(
        route([checkout], [{ name: 'currency', operator: 'is_one_of', value: ['USD'] }]),
      ).expect(201);
      const paid = await pay({
        amount: 4000,
        currency: 'USD',
        token: await cardToken('4242424242424242'),
      }).expect(201);
      expect(paid.body.connection.id).toBe(stripe);
      const before = await count();
      const none = await pay({ amount: 6000, currency: 'USD', token: await cardToken('4242424242424242') });
      expectField(none, 400, 'connection_id');
      expect(none.body.code).toBe('no_connection_available');
      const noRule = await pay({ amount: 100, currency: 'GBP', token: await cardToken('4242424242424242') });
      expectField(noRule, 400, 'connection_id');
      expect(noRule.body.code).toBe('no_connection_available');
      expect(await count()).toBe(before);
    });

    it("keeps the candidates that accept the payment's country", async () => {
      const dutch = (
        await newConnection(t, key, { currencies: ['USD'], countries: ['NL'], formulaId: 'adyen-card' })
      ).id;
      await createRule(route([stripe, dutch])).expect(201);
      const nl = await pay({
        amount: 100,
        currency: 'USD',
        country: 'NL',
        token: await cardToken('4242424242424242'),
      });
      expect(nl.status).toBe(201);
      expect(nl.body.connection.id).toBe(dutch);
      const us = await pay({
        amount: 100,
        currency: 'USD',
        country: 'US',
        token: await cardToken('4242424242424242'),
      });
      expect(us.body.connection.id).toBe(stripe);
      const evaluated = await request(t.http)
        .post(EVALUATE)
        .set('BT-API-KEY', key)
        .send({ amount: 100, currency: 'USD', country: 'FR', token: await cardToken('4242424242424242') })
        .expect(200);
      expect(evaluated.body.connections).toEqual([]);
      const attempts = await request(t.http)
        .get(`/orchestration/transactions/${nl.body.id}/attempts`)
        .set('BT-API-KEY', key)
        .expect(200);
      expect(attempts.body.map((a: { connection: { id: string } }) => a.connection.id)).toEqual([dutch]);
    });

    it('an inactive connection is skipped, and a deleted one too', async () => {
      const spare = (
        await newConnection(t, key, { currencies: ['USD'], countries: ['US'], formulaId: 'nmi-card' })
      ).id;
      await createRule(route([spare, stripe])).expect(201);
      await request(t.http)
        .put(`/orchestration/connections/${spare}`)
        .set('BT-API-KEY', key)
        .send({
          connection_formula_id: 'nmi-card',
          method: 'card',
          display_name: 'spare',
          fields: [{ key: 'api_key', value: 'sk_test_ok_api_key' }],
          accepted_countries: ['US'],
          accepted_currencies: ['USD'],
          active: false,
        });
      const paid = await pay({
        amount: 100,
        currency: 'USD',
        token: await cardToken('4242424242424242'),
      }).expect(201);
      expect(paid.body.connection.id).toBe(stripe);
      await request(t.http).delete(`/orchestration/connections/${spare}`).set('BT-API-KEY', key).expect(204);
      const again = await pay({
        amount: 100,
        currency: 'USD',
        token: await cardToken('4242424242424242'),
      }).expect(201);
      expect(again.body.connection.id).toBe(stripe);
    });
  });

  describe('decline-early', () => {
    afterEach(clear);

    it('declines before any vendor call, with or without connection_id: 201, declined_by_rule, no connection', async () => {
      await createRule(
        decline([{ name: 'card_bin', operator: 'is_one_of', value: ['400000-400099'] }]),
        'decline-early',
      ).expect(201);
      await createRule(route([stripe])).expect(201);
      const token = await cardToken('4000000000000077');
      for (const body of [
        { amount: 500, currency: 'USD', token },
        { amount: 500, currency: 'USD', token, connection_id: stripe },
      ]) {
        const res = await pay(body).expect(201);
        expect(res.body).toMatchObject({
          status: 'authorization_declined',
          error_code: 'declined_by_rule',
          intent_outcome: 'failed',
          connection: null,
          connection_transaction_id: null,
          authorized_amount: 0,
        });
        const captured = await request(t.http)
          .post(`/orchestration/transactions/${res.body.id}/capture`)
          .set('BT-API-KEY', key)
          .send({});
        expectProblem(captured, 409);
        const got = await request(t.http)
          .get(`/orchestration/transactions/${res.body.id}`)
          .set('BT-API-KEY', key);
        expect(got.body.status).toBe('authorization_declined');
        // No vendor was called: no attempt.
        const attempts = await request(t.http)
          .get(`/orchestration/transactions/${res.body.id}/attempts`)
          .set('BT-API-KEY', key)
          .expect(200);
        expect(attempts.body).toEqual([]);
      }
      // Another card is routed as usual.
      const paid = await pay({
        amount: 500,
        currency: 'USD',
        token: await cardToken('4242424242424242'),
      }).expect(201);
      expect(paid.body.status).toBe('authorization_succeeded');
      const listed = await request(t.http)
        .get('/orchestration/transactions')
        .query({ status: 'authorization_declined' })
        .set('BT-API-KEY', key)
        .expect(200);
      expect(listed.body.data.filter((tx: { connection: unknown }) => tx.connection === null).length).toBe(2);
    });

    it("a body error is reported before a rule's decline; a connection error only after it", async () => {
      await createRule(decline([]), 'decline-early').expect(201);
      const token = await cardToken('4242424242424242');
      expectField(await pay({ amount: 500, currency: 'USD', token, metadata: { a: 1 } }), 400, 'metadata.a');
      const declined = await pay({ amount: 500, currency: 'USD', token, connection_id: checkout }).expect(
        201,
      );
      expect(declined.body.error_code).toBe('declined_by_rule');
    });

    it('the same idempotency key answers the same declined transaction', async () => {
      await createRule(
        decline([{ name: 'metadata', operator: 'equal_to', value: { key: 'risk', value: 'high' } }]),
        'decline-early',
      ).expect(201);
      const body = {
        amount: 500,
        currency: 'USD',
        token: await cardToken('4242424242424242'),
        metadata: { risk: 'high' },
        connection_id: stripe,
      };
      const first = await pay(body).set('BT-IDEMPOTENCY-KEY', 'decline-once').expect(201);
      const again = await pay(body).set('BT-IDEMPOTENCY-KEY', 'decline-once').expect(201);
      expect(again.body.id).toBe(first.body.id);
    });
  });

  describe('evaluate', () => {
    afterEach(clear);
    const evaluate = (body: Record<string, unknown>, apiKey = key) =>
      request(t.http).post(EVALUATE).set('BT-API-KEY', apiKey).send(body);

    it('answers the decision and the connections in order, and creates nothing', async () => {
      const decliner = (
        await createRule(
          decline([{ name: 'country', operator: 'is_one_of', value: ['DE'] }]),
          'decline-early',
        ).expect(201)
      ).body as Rule;
      const router = (
        await createRule(
          route(
            [checkout, braintree, stripe],
            [{ name: 'card_scheme', operator: 'is_one_of', value: ['visa'] }],
          ),
        ).expect(201)
      ).body as Rule;
      const token = await cardToken('4242424242424242');
      const before = await count();
      const routed = await evaluate({ amount: 100, currency: 'USD', token }).expect(200);
      expect(routed.body.declined).toBe(false);
      expect(routed.body.rule_id).toBe(router.id);
      expect(routed.body.connections.map((c: { id: string }) => c.id)).toEqual([braintree, stripe]);
      expect(routed.body.connections[0]).toMatchObject({
        connection_formula_id: 'braintree-card',
        status: 'available',
      });
      expect(JSON.stringify(routed.body)).not.toContain('sk_test_ok_private_key');
      const declined = await evaluate({ amount: 100, currency: 'USD', token, country: 'DE' }).expect(200);
      expect(declined.body).toEqual({ declined: true, rule_id: decliner.id, connections: [] });
      const unmatched = await evaluate({
        amount: 100,
        currency: 'USD',
        token: await cardToken('5555555555554444'),
      }).expect(200);
      expect(unmatched.body).toEqual({ declined: false, rule_id: null, connections: [] });
      expect(await count()).toBe(before);
    });

    it('refuses connection_id, and a token the caller may not use', async () => {
      const token = await cardToken('4242424242424242');
      expectField(
        await evaluate({ amount: 100, currency: 'USD', token, connection_id: stripe }),
        400,
        'connection_id',
      );
      const reader = (
        await newApplication(t, tenant.managementKey, {
          type: 'private',
          permissions: ['orchestration:flows:read'],
        })
      ).key;
      expectField(await evaluate({ amount: -1, currency: 'USD', token }), 400, 'amount');
      // Without token:use the dry run is refused as the payment is: a 403 that does not depend on the
      // token (one that exists, one that does not), the same answer a transaction create gives.
      const missing = 'tok_' + 'x'.repeat(20);
      const refusals = [
        await evaluate({ amount: 100, currency: 'USD', token }, reader),
        await evaluate({ amount: 100, currency: 'USD', token: missing }, reader),
        await pay({ amount: 100, currency: 'USD', token }, reader),
        await pay({ amount: 100, currency: 'USD', token: missing }, reader),
      ];
      for (const res of refusals) expectProblem(res, 403);
      const shown = (res: request.Response) => ({ ...res.body, instance: undefined, trace_id: undefined });
      expect(new Set(refusals.map((res) => JSON.stringify(shown(res)))).size).toBe(1);
    });

    it('token:use is checked on the token through rules, as a transaction create checks it', async () => {
      const pci = await cardToken('4242424242424242');
      const app = await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['orchestration:flows:read'],
        rules: [
          { priority: 1, container: '/bank/', permissions: ['token:use'] },
          { priority: 2, container: '/', permissions: ['token:read'] },
        ],
      });
      const body = { amount: 100, currency: 'USD', token: pci };
      // A rule that matches the token and withholds token:use: 403, for the dry run and the payment.
      expectProblem(await evaluate(body, app.key), 403);
      expectProblem(await pay(body, app.key), 403);
      // A rule granting it on the token's container: the dry run answers.
      const user = await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['orchestration:flows:read'],
        rules: [{ priority: 1, container: '/', permissions: ['token:use'] }],
      });
      expect((await evaluate(body, user.key).expect(200)).body).toEqual({
        declined: false,
        rule_id: null,
        connections: [],
      });
      // token:use through a rule does not stand in for orchestration:flows:read.
      const scoped = await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: [],
        rules: [{ priority: 1, container: '/', permissions: ['token:use', 'orchestration:flows:read'] }],
      });
      expectProblem(await evaluate(body, scoped.key), 403);
    });

    it('a dry run tells no digit of a card past the 6th, whatever the rules stored hold', async () => {
      // A key that may use the card (not read it) and write rules: ranges of 6 digits find the first 6
      // (a masked read shows as many); a 7th digit cannot be named, so it cannot be searched for.
      const prober = (
        await newApplication(t, tenant.managementKey, {
          type: 'private',
          permissions: ['orchestration:flows:read', 'orchestration:flows:update', 'token:use'],
        })
      ).key;
      const token = await cardToken('4242424242424242');
      const probe = async (value: string[]) => {
        const res = await createRule(
          decline([{ name: 'card_bin', operator: 'is_one_of', value }]),
          'decline-early',
          prober,
        );
        if (res.status !== 201) return res.status;
        const answer = await evaluate({ amount: 100, currency: 'USD', token }, prober).expect(200);
        await request(t.http)
          .delete(`${RULES}/decline-early/rules/${(res.body as Rule).id}`)
          .set('BT-API-KEY', prober)
          .expect(204);
        return answer.body.declined as boolean;
      };
      expect(await probe(['400000-449999'])).toBe(true);
      expect(await probe(['424242'])).toBe(true);
      expect(await probe(['4242420-4242424'])).toBe(400);
      expect(await probe(['4242424'])).toBe(400);
      expect(await probe(['42424200-42424299'])).toBe(400);

      // Rules stored before the limit (up to 8 digits) are compared on their first 6 digits: whether the
      // card's 7th and 8th digits are inside or outside, the answer is the same.
      const legacy = (
        await createRule(
          decline([{ name: 'card_bin', operator: 'is_one_of', value: ['424242'] }]),
          'decline-early',
        ).expect(201)
      ).body as Rule;
      const stored = async (value: string[]) => {
        await db.query(`UPDATE flow_rules SET conditions = $1::jsonb WHERE id = $2`, [
          JSON.stringify([{ name: 'card_bin', operator: 'is_one_of', value }]),
          legacy.id,
        ]);
        t.app.get(FlowRulesService).invalidate();
        return (await evaluate({ amount: 100, currency: 'USD', token }, prober).expect(200)).body
          .declined as boolean;
      };
      const answers = [];
      for (const value of [
        ['42424242'],
        ['42424299'],
        ['4242420'],
        ['4242429'],
        ['42424200-42424241'],
        ['42424243-42424299'],
        ['4242420-4242424'],
      ])
        answers.push(await stored(value));
      expect(answers).toEqual(answers.map(() => true));
      expect(await stored(['42424300-42424399'])).toBe(false);
      expect(await stored(['5555555'])).toBe(false);
    });
  });
});
