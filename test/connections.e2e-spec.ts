import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import {
  newConnection,
  ORCHESTRATION_PERMISSIONS,
  verificationLogs,
  waitForConnection,
} from './support/orchestration';

/** The formulas the service ships (its own copy, in src); the test below checks it against the published table. */
const FORMULAS = JSON.parse(
  readFileSync(join(__dirname, '../src/modules/orchestration/formulas/formula-catalog.json'), 'utf8'),
);
/**
 * SHA-256 of the published table of the 18 card connection formulas (the interface document's
 * `formulas.json`, as `JSON.stringify` of its parsed content): the copy the service serves must be it,
 * byte for byte once parsed. The table itself is not part of this repository.
 */
const PUBLISHED_FORMULAS_SHA256 = '78ea241b72b3592a3f22a8bf4189c0428fcb814667ed86b0b580feb248c7c77a';

describe('connection formulas and connections', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let key: string;

  beforeAll(async () => {
    t = await startApp();
    db = t.app.get(DataSource);
    tenant = await newTenant(t);
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
  });
  afterAll(() => t.close());

  const post = (path: string, body: object, k = key) =>
    request(t.http).post(path).set('BT-API-KEY', k).send(body);
  const count = async () =>
    (await db.query('SELECT count(*)::int AS n FROM connections WHERE tenant_id = $1', [tenant.tenantId]))[0]
      .n;

  it('lists the 18 formulas exactly as published, at every path docs/payments.md names', async () => {
    const res = await request(t.http)
      .get('/orchestration/connection_formulas')
      .set('BT-API-KEY', key)
      .expect(200);
    expect(res.body).toHaveLength(18);
    // The published table, with one feature added since (network_tokens, docs/wallets.md).
    const published = (res.body as { supported_features: Record<string, boolean> }[]).map((f) => {
      const { network_tokens, ...features } = f.supported_features;
      expect(typeof network_tokens).toBe('boolean');
      return { ...f, supported_features: features };
    });
    expect(createHash('sha256').update(JSON.stringify(published)).digest('hex')).toBe(
      PUBLISHED_FORMULAS_SHA256,
    );
    const rails = ['stripe-card', 'adyen-card', 'checkout-card', 'braintree-card'];
    for (const f of res.body as { id: string; supported_features: Record<string, boolean> }[])
      if (rails.includes(f.id)) expect(f.supported_features.network_tokens).toBe(true);
    expect(res.body).toEqual(FORMULAS);
    for (const [method, path] of [
      ['post', '/orchestration/connection_formulas'],
      ['get', '/orchestration/connection/formulas'],
      ['post', '/orchestration/connection/formulas'],
    ] as const) {
      const alias = await request(t.http)[method](path).set('BT-API-KEY', key).expect(200);
      expect(alias.body).toEqual(FORMULAS);
    }
    const other = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    expectProblem(
      await request(t.http).get('/orchestration/connection_formulas').set('BT-API-KEY', other.key),
      403,
    );
  });

  const valid = () => ({
    connection_formula_id: 'adyen-card',
    method: 'card',
    display_name: 'Adyen EU',
    fields: [
      { key: 'api_key', value: 'AQE-secret-api-key-1' },
      { key: 'merchant_account', value: 'AcmeECOM' },
    ],
    accepted_countries: ['DE', 'FR'],
    accepted_currencies: ['EUR'],
    active: true,
  });

  it('creates a pending connection that verification makes available; secrets show as ********', async () => {
    const formula = FORMULAS.find((f: { id: string }) => f.id === 'adyen-card');
    const body = valid();
    body.fields = formula.fields
      .filter((f: { required: boolean }) => f.required)
      .map((f: { key: string }) => ({ key: f.key, value: `value-of-${f.key}` }));
    const res = await post('/orchestration/connections', body).expect(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      connection_formula_id: 'adyen-card',
      display_name: 'Adyen EU',
      fields: body.fields.map((f: { key: string; value: string }) => ({
        key: f.key,
        value: formula.fields.find((ff: { key: string }) => ff.key === f.key).secret ? '********' : f.value,
      })),
      accepted_countries: ['DE', 'FR'],
      accepted_currencies: ['EUR'],
      active: true,
      environment: 'sandbox',
      status: 'pending',
      three_d_secure_enabled: true,
    });
    expect(res.body).not.toHaveProperty('method');
    expect(await waitForConnection(t, key, res.body.id)).toBe('available');
    const got = await request(t.http)
      .get(`/orchestration/connections/${res.body.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(got.body.method).toBe('card');
    expect(got.body.status).toBe('available');
    const list = await request(t.http).get('/orchestration/connections').set('BT-API-KEY', key).expect(200);
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body.map((c: { id: string }) => c.id)).toContain(res.body.id);
    expect(list.body.every((c: { method: string }) => c.method === 'card')).toBe(true);
    // The interface document labels the list PUT: it answers the same.
    const put = await request(t.http).put('/orchestration/connections').set('BT-API-KEY', key).expect(200);
    expect(put.body).toEqual(list.body);
  });

  it('fails verification for a credential containing "invalid", and stays failed when the secret is kept', async () => {
    const created = await newConnection(t, key, { secret: 'sk_test_invalid', wait: true });
    expect(await waitForConnection(t, key, created.id)).toBe('failed');
    // Why it failed is in the connection's audit log: a fixed reason naming the field, never its value.
    const [failed] = await verificationLogs(t, tenant.managementKey, created.id);
    expect(failed).toMatchObject({
      actor_type: 'system',
      actor_id: null,
      operation: 'update',
      message: 'connection verification failed: the vendor rejected the value of secret_key',
    });
    const formula = FORMULAS.find((f: { id: string }) => f.id === 'stripe-card');
    const update = (value: string) =>
      request(t.http)
        .put(`/orchestration/connections/${created.id}`)
        .set('BT-API-KEY', key)
        .send({
          connection_formula_id: 'stripe-card',
          method: 'card',
          display_name: 'Stripe renamed',
          fields: [{ key: formula.fields[0].key, value }],
          accepted_countries: ['US'],
          accepted_currencies: ['USD'],
        });
    const kept = await update('********').expect(200);
    expect(kept.body).toMatchObject({ status: 'pending', method: 'card', display_name: 'Stripe renamed' });
    expect(await waitForConnection(t, key, created.id)).toBe('failed');
    await update('sk_test_good').expect(200);
    expect(await waitForConnection(t, key, created.id)).toBe('available');
    expect((await verificationLogs(t, tenant.managementKey, created.id)).map((l) => l.message)).toEqual([
      'connection verification failed: the vendor rejected the value of secret_key',
      'connection verification failed: the vendor rejected the value of secret_key',
      'connection verified: available',
    ]);
    const logs = await request(t.http)
      .get('/logs')
      .query({ entity_type: 'connection', entity_id: created.id })
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(JSON.stringify(logs.body)).not.toContain('sk_test_invalid');
    // POST to the connection's path is an update too (the interface document's sample).
    const byPost = await post(`/orchestration/connections/${created.id}`, {
      connection_formula_id: 'stripe-card',
      method: 'card',
      display_name: 'Stripe by POST',
      fields: [{ key: formula.fields[0].key, value: '********' }],
      accepted_countries: ['US'],
      accepted_currencies: ['USD'],
    }).expect(200);
    expect(byPost.body.display_name).toBe('Stripe by POST');
    expect(await waitForConnection(t, key, created.id)).toBe('available');
  });

  it('reports each validation error by field path and creates nothing', async () => {
    const before = await count();
    const cases: [Record<string, unknown>, string][] = [
      [{ connection_formula_id: 'nope-card' }, 'connection_formula_id'],
      [{ method: 'bank' }, 'method'],
      [{ display_name: '' }, 'display_name'],
      [{ display_name: 'x'.repeat(101) }, 'display_name'],
      [{ fields: [{ key: 'api_key', value: 'k' }] }, 'fields'],
      [{ fields: [...valid().fields, { key: 'color', value: 'blue' }] }, 'fields[2].key'],
      [{ fields: [{ key: 'api_key', value: ' ' }, valid().fields[1]] }, 'fields[0].value'],
      [{ fields: [...valid().fields, valid().fields[0]] }, 'fields[2].key'],
      [{ fields: [{ key: 'api_key' }, valid().fields[1]] }, 'fields[0].value'],
      [{ accepted_countries: [] }, 'accepted_countries'],
      [{ accepted_countries: ['DE', 'ZZ'] }, 'accepted_countries[1]'],
      [{ accepted_currencies: [] }, 'accepted_currencies'],
      [{ accepted_currencies: ['EUR', 'XXX'] }, 'accepted_currencies[1]'],
      [{ active: 'yes' }, 'active'],
      [{ surprise: 1 }, 'surprise'],
    ];
    for (const [override, path] of cases) {
      const res = await post('/orchestration/connections', { ...valid(), ...override });
      expectProblem(res, 400);
      expect({ override, paths: Object.keys(res.body.errors) }).toEqual({ override, paths: [path] });
    }
    expect(await count()).toBe(before);
  });

  it('never returns nor stores a secret value in clear', async () => {
    const secret = 'sk_live_DoNotLeak_9f8e7d';
    const created = await post('/orchestration/connections', {
      ...valid(),
      connection_formula_id: 'stripe-card',
      fields: [{ key: 'secret_key', value: secret }],
      accepted_countries: ['US'],
      accepted_currencies: ['USD'],
    }).expect(201);
    await waitForConnection(t, key, created.body.id);
    const responses = JSON.stringify([
      created.body,
      (await request(t.http).get(`/orchestration/connections/${created.body.id}`).set('BT-API-KEY', key))
        .body,
      (await request(t.http).get('/orchestration/connections').set('BT-API-KEY', key)).body,
    ]);
    expect(responses).not.toContain(secret);
    const dump = execFileSync('pg_dump', ['--data-only', process.env.DATABASE_URL!], {
      encoding: 'utf8',
      maxBuffer: 512 * 1024 * 1024,
    });
    expect(dump).toContain(created.body.id);
    expect(dump).not.toContain(secret);
    expect(t.logs.join('\n')).not.toContain(secret);
  });

  it('a connection with transactions is soft-deleted; one without is removed; both vanish from list and get', async () => {
    const unused = await newConnection(t, key);
    await request(t.http)
      .delete(`/orchestration/connections/${unused.id}`)
      .set('BT-API-KEY', key)
      .expect(204);
    expect((await db.query('SELECT 1 FROM connections WHERE id = $1', [unused.id])).length).toBe(0);

    const used = await newConnection(t, key, { currencies: ['USD'], countries: ['US'] });
    const token = await post('/tokenize', {
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
    }).expect(201);
    const tx = await post('/orchestration/transactions', {
      amount: 100,
      currency: 'USD',
      connection_id: used.id,
      token: token.body.id,
    }).expect(201);
    await request(t.http).delete(`/orchestration/connections/${used.id}`).set('BT-API-KEY', key).expect(204);
    expectProblem(
      await request(t.http).get(`/orchestration/connections/${used.id}`).set('BT-API-KEY', key),
      404,
    );
    const list = await request(t.http).get('/orchestration/connections').set('BT-API-KEY', key).expect(200);
    expect(list.body.map((c: { id: string }) => c.id)).not.toContain(used.id);
    const still = await request(t.http)
      .get(`/orchestration/transactions/${tx.body.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(still.body.connection).toEqual({
      id: used.id,
      connection_formula_id: 'stripe-card',
      display_name: 'Stripe test',
      method: 'card',
    });
    // A deleted connection takes no new payments.
    const refused = await post('/orchestration/transactions', {
      amount: 100,
      currency: 'USD',
      connection_id: used.id,
      token: token.body.id,
    });
    expectProblem(refused, 400);
    expect(Object.keys(refused.body.errors)).toEqual(['connection_id']);
  });

  it('another tenant can neither see nor touch a connection', async () => {
    const mine = await newConnection(t, key);
    const other = await newTenant(t, 'other');
    const theirKey = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    expectProblem(
      await request(t.http).get(`/orchestration/connections/${mine.id}`).set('BT-API-KEY', theirKey),
      404,
    );
    expectProblem(
      await request(t.http)
        .put(`/orchestration/connections/${mine.id}`)
        .set('BT-API-KEY', theirKey)
        .send({ ...valid() }),
      404,
    );
    expectProblem(
      await request(t.http).delete(`/orchestration/connections/${mine.id}`).set('BT-API-KEY', theirKey),
      404,
    );
    const theirs = await request(t.http)
      .get('/orchestration/connections')
      .set('BT-API-KEY', theirKey)
      .expect(200);
    expect(theirs.body).toEqual([]);
    const theirsByPut = await request(t.http)
      .put('/orchestration/connections')
      .set('BT-API-KEY', theirKey)
      .expect(200);
    expect(theirsByPut.body).toEqual([]);
    await request(t.http).get(`/orchestration/connections/${mine.id}`).set('BT-API-KEY', key).expect(200);
  });

  it('checks permissions per operation', async () => {
    const createOnly = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['orchestration:connections:create', 'orchestration:connection_formulas'],
    });
    const created = await newConnection(t, createOnly.key, { wait: false });
    expectProblem(
      await request(t.http).get('/orchestration/connections').set('BT-API-KEY', createOnly.key),
      403,
    );
    expectProblem(
      await request(t.http)
        .delete(`/orchestration/connections/${created.id}`)
        .set('BT-API-KEY', createOnly.key),
      403,
    );
    const pub = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    expectProblem(await post('/orchestration/connections', valid(), pub.key), 403);
  });

  it('logs connection operations', async () => {
    const created = await newConnection(t, key);
    await request(t.http)
      .delete(`/orchestration/connections/${created.id}`)
      .set('BT-API-KEY', key)
      .expect(204);
    const logs = await request(t.http)
      .get('/logs')
      .query({ entity_type: 'connection', entity_id: created.id })
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    const operations = logs.body.data.map((l: { operation: string }) => l.operation);
    // Polling for the verification result reads the connection (a read log each time); the
    // verification itself writes one update row, by the service.
    expect(operations[0]).toBe('delete');
    expect(operations[operations.length - 1]).toBe('create');
    expect(new Set(operations.slice(1, -1))).toEqual(new Set(['read', 'update']));
    expect(
      logs.body.data
        .filter((l: { operation: string }) => l.operation === 'update')
        .map((l: { actor_type: string; message: string }) => [l.actor_type, l.message]),
    ).toEqual([['system', 'connection verified: available']]);
  });
});
