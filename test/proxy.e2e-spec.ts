import type { LookupAddress } from 'node:dns';
import request from 'supertest';
import { Clock } from '../src/common/jobs/clock';
import { OutboundHttp, OutboundLookup } from '../src/common/outbound/outbound-http.service';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { authorizedSession, cardData, luhnCard } from './support/attacker';
import { Destination } from './support/destination';

/**
 * The ephemeral proxy (docs/proxy.md): a request to `/proxy` with `BT-PROXY-URL` goes to a local
 * destination (allowed through OUTBOUND_ALLOWED_HOSTS=127.0.0.1) with token expressions replaced.
 */
describe('proxy: ephemeral (BT-PROXY-URL)', () => {
  let t: TestApp;
  let dest: Destination;
  let tenant: TestTenant;
  let other: TestTenant;
  let pvt: string;
  let db: DataSource;
  const number = luhnCard();
  let cardId: string;
  let bankId: string;
  let textId: string;
  let otherCardId: string;

  beforeAll(async () => {
    dest = await new Destination().start();
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', PROXY_TIMEOUT_MS: '3000' });
    db = t.app.get(DataSource);
    tenant = await newTenant(t);
    other = await newTenant(t, 'other tenant');
    pvt = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:use'],
      })
    ).key;
    const made = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', pvt)
      .send({
        card: { type: 'card', data: cardData(number, { cvc: '987' }) },
        bank: { type: 'bank', data: { routing_number: '021000021', account_number: '55667788' } },
        text: { type: 'token', data: 'hello-secret-text' },
      })
      .expect(201);
    cardId = made.body.card.id;
    bankId = made.body.bank.id;
    textId = made.body.text.id;
    const otherPvt = (
      await newApplication(t, other.managementKey, { type: 'private', permissions: ['token:create'] })
    ).key;
    otherCardId = (
      await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', otherPvt)
        .send({ type: 'card', data: cardData(luhnCard()) })
        .expect(201)
    ).body.id;
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });
  beforeEach(() => dest.reset());

  const proxy = (method: 'get' | 'post' | 'put' | 'patch' | 'delete', path = '', key = pvt) =>
    request(t.http)[method](`/proxy${path}`).set('BT-API-KEY', key).set('BT-PROXY-URL', dest.url('/api'));

  const proxyError = (res: request.Response, status: number) => {
    expectProblem(res, status);
    expect(res.headers['bt-proxy-error']).toBe('true');
  };

  it('replaces whole-value and in-text expressions in a JSON body, and returns the answer as it is', async () => {
    const res = await proxy('post', '/charges?mode=test')
      .set('X-Custom', 'kept')
      .send({
        card: `{{ ${cardId} }}`,
        number: `{{ token: ${cardId} | json: '$.number' }}`,
        month: `{{ ${cardId} | json: '$.expiration_month' }}`,
        cvc: `{{ ${cardId} | json: '$.cvc' }}`,
        bank: `{{ ${bankId} }}`,
        note: `text is {{ ${textId} }}!`,
        plain: 42,
      })
      .expect(200);
    expect(res.headers['x-echo']).toBe('yes');
    // The destination's cookies would be set on the service's origin: dropped.
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers['bt-proxy-error']).toBeUndefined();
    const [seen] = dest.received;
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/api/charges?mode=test');
    expect(JSON.parse(seen.body.toString())).toEqual({
      card: { number, expiration_month: 12, expiration_year: 2031, cvc: '987' },
      number,
      month: 12,
      cvc: '987',
      bank: { routing_number: '021000021', account_number: '55667788' },
      note: 'text is hello-secret-text!',
      plain: 42,
    });
    expect(seen.headers['x-custom']).toBe('kept');
    expect(JSON.parse(res.text).url).toBe('/api/charges?mode=test');
  });

  it('replaces expressions in a text body, the query string and headers', async () => {
    const res = await proxy('put', `/form?pan={{ ${cardId} | json: '$.number' }}&keep=a+b`)
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .set('X-Account', `acct {{ ${bankId} | json: '$.account_number' }}`)
      .send(`number={{ ${cardId} | json: '$.number' }}&text={{${textId}}}&other=%7B%7B`)
      .expect(200);
    expect(res.status).toBe(200);
    const [seen] = dest.received;
    expect(seen.body.toString()).toBe(`number=${number}&text=hello-secret-text&other=%7B%7B`);
    expect(new URL(seen.url, 'http://x').searchParams.get('pan')).toBe(number);
    expect(new URL(seen.url, 'http://x').searchParams.get('keep')).toBe('a b');
    expect(seen.headers['x-account']).toBe('acct 55667788');
  });

  it('passes a body without expressions byte for byte, binary included', async () => {
    const bytes = Buffer.from([0, 255, 123, 123, 1, 2, 125, 125, 200]);
    await proxy('post', '/bin').set('Content-Type', 'application/octet-stream').send(bytes).expect(200);
    expect(dest.received[0].body.equals(bytes)).toBe(true);
  });

  it('never forwards BT-* headers, and ignores BT-IDEMPOTENCY-KEY (each request is sent)', async () => {
    for (let i = 0; i < 2; i++)
      await proxy('post', '/pay')
        .set('BT-IDEMPOTENCY-KEY', 'same-key')
        .set('BT-TRACE-ID', 'trace-1')
        .send({ a: 1 })
        .expect(200);
    expect(dest.received).toHaveLength(2);
    for (const seen of dest.received)
      expect(Object.keys(seen.headers).filter((h) => h.startsWith('bt-'))).toEqual([]);
    const stored = await db.query(`SELECT count(*)::int AS n FROM idempotency_records WHERE tenant_id = $1`, [
      tenant.tenantId,
    ]);
    expect(stored[0].n).toBe(0);
  });

  it('returns a redirect without following it, and other statuses as they are', async () => {
    const redirected = await proxy('get', '/redirect').expect(302);
    expect(redirected.headers.location).toBe('http://127.0.0.1:1/elsewhere');
    expect(dest.received).toHaveLength(1);
    const failed = await proxy('get', '/status/503').expect(503);
    expect(failed.text).toBe('status');
    expect(failed.headers['bt-proxy-error']).toBeUndefined();
  });

  it('a token that does not exist, of another tenant, or not usable: 400 naming the expression, nothing sent', async () => {
    const readOnly = (
      await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:read'] })
    ).key;
    const cases: [string, string][] = [
      [`{{ 00000000-0000-4000-8000-000000000000 }}`, pvt],
      [`{{ ${otherCardId} }}`, pvt],
      [`{{ not-a-token-id }}`, pvt],
      [`{{ ${cardId} }}`, readOnly],
    ];
    for (const [expression, key] of cases) {
      const res = await proxy('post', '/x', key).send({ value: expression, also: `{{ ${textId} }}` });
      proxyError(res, 400);
      expect(Object.keys(res.body.errors)).toContain(expression);
      expect(JSON.stringify(res.body)).not.toContain(number);
    }
    expect(dest.connections).toBe(0);
  });

  it('is rules-aware: a key with token:use only on /bank/ may use the bank token, not the card', async () => {
    const scoped = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        rules: [{ priority: 1, container: '/bank/', permissions: ['token:use'] }],
      })
    ).key;
    await proxy('post', '/ok', scoped)
      .send({ bank: `{{ ${bankId} }}` })
      .expect(200);
    const refused = await proxy('post', '/no', scoped).send({ card: `{{ ${cardId} }}` });
    proxyError(refused, 400);
    expect(dest.received).toHaveLength(1);
  });

  it('a session key detokenizes within its grants', async () => {
    const pub = (
      await newApplication(t, tenant.managementKey, { type: 'public', permissions: ['token:create'] })
    ).key;
    const session = await authorizedSession(t, pub, pvt, {
      rules: [
        {
          priority: 1,
          conditions: [{ attribute: 'id', operator: 'equals', value: textId }],
          permissions: ['token:use'],
        },
      ],
    });
    await proxy('post', '/s', session)
      .send({ t: `{{ ${textId} }}` })
      .expect(200);
    expect(JSON.parse(dest.received[0].body.toString())).toEqual({ t: 'hello-secret-text' });
    proxyError(await proxy('post', '/s', session).send({ c: `{{ ${cardId} }}` }), 400);
    expect(dest.received).toHaveLength(1);
  });

  it('refuses public and management keys (403), a missing or bad key (401), with BT-PROXY-ERROR', async () => {
    const pub = (
      await newApplication(t, tenant.managementKey, { type: 'public', permissions: ['token:create'] })
    ).key;
    proxyError(await proxy('get', '', pub), 403);
    proxyError(await proxy('get', '', tenant.managementKey), 403);
    proxyError(await request(t.http).get('/proxy').set('BT-PROXY-URL', dest.url()), 401);
    proxyError(await proxy('get', '', 'key_pvt_nope'), 401);
    expect(dest.connections).toBe(0);
  });

  it('bad routing headers and destinations: 400 with BT-PROXY-ERROR, nothing sent', async () => {
    const send = (headers: Record<string, string>, path = '') => {
      let req = request(t.http).get(`/proxy${path}`).set('BT-API-KEY', pvt);
      for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
      return req;
    };
    proxyError(await send({}), 400);
    proxyError(await send({ 'BT-PROXY-URL': 'not a url' }), 400);
    proxyError(await send({ 'BT-PROXY-URL': `ftp://127.0.0.1:${dest.port}/` }), 400);
    proxyError(await send({ 'BT-PROXY-URL': dest.url(), 'BT-PROXY-KEY': 'key_prx_x' }), 400);
    proxyError(await send({ 'BT-PROXY-URL': dest.url() }, '/a/../../etc'), 400);
    proxyError(await send({ 'BT-PROXY-URL': dest.url() }, '/a/%2e%2e/etc'), 400);
    // 127.0.0.2 is loopback and not listed: refused by policy although the destination listens there.
    for (const url of [
      `http://127.0.0.2:${dest.port}/`,
      `http://0x7f000002:${dest.port}/`,
      `http://[::1]:${dest.port}/`,
      `http://169.254.169.254/latest/meta-data`,
      `http://10.0.0.1:${dest.port}/`,
    ]) {
      const res = await send({ 'BT-PROXY-URL': url });
      proxyError(res, 400);
      expect(res.body.code).toBe('destination_not_allowed');
    }
    expect(dest.connections).toBe(0);
  });

  it('a request body over 1 MiB is a 413 of the proxy, nothing sent', async () => {
    const res = await proxy('post', '/big')
      .set('Content-Type', 'text/plain')
      .send('x'.repeat(1024 * 1024 + 1));
    proxyError(res, 413);
    expect(dest.connections).toBe(0);
  });

  it('a destination that does not answer in time is a 504; one that is down or too large a 502', async () => {
    const slow = await proxy('get', '/slow');
    proxyError(slow, 504);
    const large = await proxy('get', '/large');
    proxyError(large, 502);
    expect(large.body.code).toBe('response_too_large');
    const down = await request(t.http)
      .get('/proxy')
      .set('BT-API-KEY', pvt)
      .set('BT-PROXY-URL', 'http://127.0.0.1:1/');
    proxyError(down, 502);
  });

  it('writes one audit row per request: method, host and status; never the path, query or body', async () => {
    const caller = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:use'],
    });
    await proxy('post', `/secret-path?q=secret-query`, caller.key)
      .send({ n: `{{ ${cardId} | json: '$.number' }}` })
      .expect(200);
    const rows: { entity_type: string; operation: string; message: string }[] = await db.query(
      `SELECT entity_type, operation, message FROM audit_logs
        WHERE tenant_id = $1 AND entity_type = 'proxy' AND entity_id = $2`,
      [tenant.tenantId, caller.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ entity_type: 'proxy', operation: 'use' });
    expect(rows[0].message).toBe(`POST to 127.0.0.1:${dest.port} answered 200`);
    for (const secret of ['secret-path', 'secret-query', number])
      expect(rows[0].message).not.toContain(secret);
    const types = await request(t.http)
      .get('/logs/entity-types')
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(types.body).toContainEqual({ display_name: 'Proxy', value: 'proxy' });
  });

  it('never writes clear data to the server log or the database', async () => {
    await proxy('post', '/log-check')
      .send({ n: `{{ ${cardId} }}` })
      .expect(200);
    const logs = t.logs.join('\n');
    // (The 3-digit CVC is searched for as a JSON member: as digits alone it turns up in timestamps.)
    for (const secret of [number, '"987"', '55667788', 'hello-secret-text'])
      expect(logs).not.toContain(secret);
    const audit = await db.query(
      `SELECT string_agg(message, ' ') AS all FROM audit_logs WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    expect(String(audit[0].all)).not.toContain(number);
  });
});

describe('proxy: pre-configured (/proxies, BT-PROXY-KEY)', () => {
  let t: TestApp;
  let dest: Destination;
  let tenant: TestTenant;
  let other: TestTenant;
  let pvt: string;
  let cardId: string;
  const number = luhnCard();

  beforeAll(async () => {
    dest = await new Destination().start();
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.0/8' });
    tenant = await newTenant(t);
    other = await newTenant(t, 'other tenant');
    pvt = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:use'],
      })
    ).key;
    cardId = (
      await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', pvt)
        .send({ type: 'card', data: cardData(number) })
    ).body.id;
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });
  beforeEach(() => dest.reset());

  const create = (body: Record<string, unknown>, key = tenant.managementKey) =>
    request(t.http).post('/proxies').set('BT-API-KEY', key).send(body);

  it('CRUD: create, get, list, put, patch, delete; the key is shown on every read', async () => {
    const made = await create({ name: 'Processor', destination_url: dest.url('/v1') }).expect(201);
    expect(made.body).toEqual({
      id: expect.any(String),
      key: expect.stringMatching(/^key_prx_[0-9A-Za-z]{40,50}$/),
      tenant_id: tenant.tenantId,
      name: 'Processor',
      destination_url: dest.url('/v1'),
      require_auth: true,
      created_by: tenant.managementApplicationId,
      created_at: expect.any(String),
      modified_by: null,
      modified_at: null,
    });
    const id = made.body.id as string;
    const got = await request(t.http)
      .get(`/proxies/${id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(got.body).toEqual(made.body);
    const listed = await request(t.http)
      .get('/proxies?name=PROC&size=5')
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(listed.body.pagination).toEqual({ total_items: 1, page_number: 1, page_size: 5, total_pages: 1 });
    expect(listed.body.data).toEqual([made.body]);
    const put = await request(t.http)
      .put(`/proxies/${id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'Renamed', destination_url: dest.url('/v2'), require_auth: false })
      .expect(200);
    expect(put.body).toMatchObject({
      name: 'Renamed',
      destination_url: dest.url('/v2'),
      require_auth: false,
      key: made.body.key,
    });
    await request(t.http)
      .patch(`/proxies/${id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .set('Content-Type', 'application/merge-patch+json')
      .send(JSON.stringify({ require_auth: true }))
      .expect(204);
    const patched = await request(t.http)
      .get(`/proxies/${id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(patched.body).toMatchObject({
      name: 'Renamed',
      require_auth: true,
      modified_by: tenant.managementApplicationId,
    });
    await request(t.http).delete(`/proxies/${id}`).set('BT-API-KEY', tenant.managementKey).expect(204);
    await request(t.http).get(`/proxies/${id}`).set('BT-API-KEY', tenant.managementKey).expect(404);
    const gone = await request(t.http)
      .get('/proxy')
      .set('BT-PROXY-KEY', made.body.key)
      .set('BT-API-KEY', pvt);
    expectProblem(gone, 404);
    expect(gone.headers['bt-proxy-error']).toBe('true');
    expect(dest.connections).toBe(0);
  });

  it('validates input, naming the field; a refused destination is a 400', async () => {
    const bad = await create({ name: '', destination_url: 'ftp://x', extra: 1 });
    expectProblem(bad, 400);
    for (const url of [
      'ftp://example.com',
      'http://10.1.2.3/',
      'http://169.254.169.254/',
      'http://user:pw@127.0.0.1/',
      `${dest.url()}/?q=1`,
    ]) {
      const res = await create({ name: 'x', destination_url: url });
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toEqual(['destination_url']);
    }
  });

  it('needs the management permissions: private keys and limited management keys are refused', async () => {
    const limited = (
      await newApplication(t, tenant.managementKey, { type: 'management', permissions: ['proxy:read'] })
    ).key;
    expectProblem(await create({ name: 'x', destination_url: dest.url() }, pvt), 403);
    expectProblem(await create({ name: 'x', destination_url: dest.url() }, limited), 403);
    await request(t.http).get('/proxies').set('BT-API-KEY', limited).expect(200);
    const made = await create({ name: 'x', destination_url: dest.url() }).expect(201);
    expectProblem(await request(t.http).delete(`/proxies/${made.body.id}`).set('BT-API-KEY', limited), 403);
    // Permissions a private application may not hold: 400 when granting them.
    const res = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'p', type: 'private', permissions: ['proxy:create'] });
    expectProblem(res, 400);
  });

  it("another tenant can neither see nor touch a tenant's proxy, nor route through it with its key", async () => {
    const made = await create({ name: 'Mine', destination_url: dest.url() }).expect(201);
    const id = made.body.id as string;
    const key = other.managementKey;
    expectProblem(await request(t.http).get(`/proxies/${id}`).set('BT-API-KEY', key), 404);
    expectProblem(
      await request(t.http)
        .put(`/proxies/${id}`)
        .set('BT-API-KEY', key)
        .send({ name: 'x', destination_url: dest.url() }),
      404,
    );
    expectProblem(
      await request(t.http).patch(`/proxies/${id}`).set('BT-API-KEY', key).send({ name: 'x' }),
      404,
    );
    expectProblem(await request(t.http).delete(`/proxies/${id}`).set('BT-API-KEY', key), 404);
    const list = await request(t.http).get('/proxies').set('BT-API-KEY', key).expect(200);
    expect(list.body.data).toEqual([]);
    const otherPvt = (
      await newApplication(t, other.managementKey, { type: 'private', permissions: ['token:use'] })
    ).key;
    const routed = await request(t.http)
      .get('/proxy')
      .set('BT-PROXY-KEY', made.body.key)
      .set('BT-API-KEY', otherPvt);
    expectProblem(routed, 404);
    expect(dest.connections).toBe(0);
    await request(t.http).get(`/proxies/${id}`).set('BT-API-KEY', tenant.managementKey).expect(200);
  });

  it('routes by BT-PROXY-KEY: with require_auth a key is needed and detokenizes; the path and query are appended', async () => {
    const made = await create({ name: 'Auth', destination_url: dest.url('/base') }).expect(201);
    const noKey = await request(t.http).post('/proxy/pay').set('BT-PROXY-KEY', made.body.key).send({ n: 1 });
    expectProblem(noKey, 401);
    expect(noKey.headers['bt-proxy-error']).toBe('true');
    expect(dest.connections).toBe(0);
    await request(t.http)
      .post('/proxy/pay?x=1')
      .set('BT-PROXY-KEY', made.body.key)
      .set('BT-API-KEY', pvt)
      .send({ n: `{{ ${cardId} | json: '$.number' }}` })
      .expect(200);
    expect(dest.received[0].url).toBe('/base/pay?x=1');
    expect(JSON.parse(dest.received[0].body.toString())).toEqual({ n: number });
  });

  it('without require_auth the request is anonymous and expressions are sent as they are', async () => {
    const made = await create({ name: 'Open', destination_url: dest.url(), require_auth: false }).expect(201);
    const body = { n: `{{ ${cardId} | json: '$.number' }}` };
    await request(t.http).post('/proxy').set('BT-PROXY-KEY', made.body.key).send(body).expect(200);
    expect(JSON.parse(dest.received[0].body.toString())).toEqual(body);
    const rows = await t.app
      .get(DataSource)
      .query(
        `SELECT actor_type, entity_id FROM audit_logs WHERE entity_type = 'proxy' AND operation = 'use' AND entity_id = $1`,
        [made.body.id],
      );
    expect(rows).toEqual([{ actor_type: 'anonymous', entity_id: made.body.id }]);
  });

  it('an unknown proxy key is a 404 with BT-PROXY-ERROR, nothing sent', async () => {
    for (const key of ['key_prx_unknownunknownunknownunknownunknownunknown', 'garbage']) {
      const res = await request(t.http).get('/proxy').set('BT-PROXY-KEY', key).set('BT-API-KEY', pvt);
      expectProblem(res, 404);
      expect(res.headers['bt-proxy-error']).toBe('true');
    }
    expect(dest.connections).toBe(0);
  });
});

describe('proxy: DNS rebinding (a host name resolving to a refused address)', () => {
  let t: TestApp;
  let dest: Destination;
  let tenant: TestTenant;
  let pvt: string;
  /** What `rebind.test` resolves to now: the test switches it between checking and using. */
  let answer: LookupAddress[] = [{ address: '93.184.215.14', family: 4 }];

  beforeAll(async () => {
    dest = await new Destination().start();
    // No allow-list: loopback is refused, whatever name leads there.
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '' });
    const fake: OutboundLookup = async (hostname) =>
      hostname === 'rebind.test' ? answer : [{ address: '127.0.0.1', family: 4 }];
    // The resolver is the component's one injection point; the running app's instance gets the fake.
    const outbound: unknown = t.app.get(OutboundHttp);
    (outbound as { resolve: OutboundLookup }).resolve = fake;
    tenant = await newTenant(t);
    pvt = (await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:use'] }))
      .key;
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });

  it('an ephemeral request to a name that resolves to loopback is refused, nothing reaches it', async () => {
    const res = await request(t.http)
      .get('/proxy')
      .set('BT-API-KEY', pvt)
      .set('BT-PROXY-URL', `http://localhost.example:${dest.port}/`);
    expectProblem(res, 400);
    expect(res.body.code).toBe('destination_not_allowed');
    expect(res.headers['bt-proxy-error']).toBe('true');
    expect(dest.connections).toBe(0);
  });

  it('a proxy whose name was public when created and is loopback when used is refused at connect', async () => {
    answer = [{ address: '93.184.215.14', family: 4 }];
    const made = await request(t.http)
      .post('/proxies')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'Rebinding', destination_url: `http://rebind.test:${dest.port}/` })
      .expect(201);
    answer = [{ address: '127.0.0.1', family: 4 }];
    const res = await request(t.http)
      .post('/proxy')
      .set('BT-PROXY-KEY', made.body.key)
      .set('BT-API-KEY', pvt)
      .send({});
    expectProblem(res, 400);
    expect(res.body.code).toBe('destination_not_allowed');
    expect(dest.connections).toBe(0);
    // And a name that resolves only to refused addresses is refused when the proxy is created.
    const refused = await request(t.http)
      .post('/proxies')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'Loopback', destination_url: `http://rebind.test:${dest.port}/` });
    expectProblem(refused, 400);
    expect(Object.keys(refused.body.errors)).toEqual(['destination_url']);
  });
});

describe('proxy: anonymous requests are rate-limited per proxy key', () => {
  let t: TestApp;
  let dest: Destination;

  beforeAll(async () => {
    dest = await new Destination().start();
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });

  it('past RATE_LIMIT_PER_MINUTE a proxy without require_auth answers 429 with BT-PROXY-ERROR', async () => {
    // Away from a minute's edge, so that the window does not turn over mid-test: near it, the service's
    // clock moves to just past the next window's start.
    const clock = t.app.get(Clock);
    const left = 60_000 - (clock.now().getTime() % 60_000);
    if (left < 5_000) clock.advance(left + 100);
    const tenant = await newTenant(t);
    const made = await request(t.http)
      .post('/proxies')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'Open', destination_url: dest.url(), require_auth: false })
      .expect(201);
    for (let i = 0; i < 3; i++)
      await request(t.http).get('/proxy').set('BT-PROXY-KEY', made.body.key).expect(200);
    const limited = await request(t.http).get('/proxy').set('BT-PROXY-KEY', made.body.key);
    expectProblem(limited, 429);
    expect(limited.headers['retry-after']).toBeDefined();
    expect(limited.headers['bt-proxy-error']).toBe('true');
    expect(dest.received).toHaveLength(3);
  });
});
