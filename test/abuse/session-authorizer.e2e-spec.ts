import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from '../support/app';
import { authorizedSession, cardData, luhnCard, patchToken, tokenize } from '../support/attacker';
import { Destination } from '../support/destination';
import { newConnection, ORCHESTRATION_PERMISSIONS } from '../support/orchestration';

/**
 * Abuse class: a session doing more than its authorizer may (issue 29). A private application whose
 * rules on /secret/ (priority 1) withhold read and use is refused a token that sits in both /secret/
 * and /pci/. A session it authorized with a rule on /pci/ must be refused that token too, on every
 * route: get, update, delete, reveal, list and search, the ephemeral and pre-configured proxies, and
 * transactions. Whatever the authorizer may do on that token now decides, token by token.
 */
describe('abuse: a session never does more than its authorizer may do now, token by token', () => {
  let t: TestApp;
  let dest: Destination;
  let db: DataSource;
  let tenant: TestTenant;
  let pub: string;
  let owner: string;
  let connection: string;
  const secret = luhnCard();
  const pciOnly = luhnCard();

  const SECRET_CREATE = { priority: 1, container: '/secret/', permissions: ['token:create'] };
  const ALL = ['token:create', 'token:read', 'token:use', 'token:update', 'token:delete', 'token:search'];

  beforeAll(async () => {
    dest = await new Destination().start();
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.0/8', RATE_LIMIT_PER_MINUTE: '100000' });
    db = t.app.get(DataSource);
    tenant = await newTenant(t, 'session authorizer abuse');
    pub = (await newApplication(t, tenant.managementKey, { type: 'public', permissions: ['token:create'] }))
      .key;
    owner = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: [...new Set([...ORCHESTRATION_PERMISSIONS, ...ALL])],
      })
    ).key;
    connection = (await newConnection(t, owner, { currencies: ['USD'], countries: ['US'] })).id;
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });
  beforeEach(() => dest.reset());

  /** A card token (with a CVC) in these containers, made by the owner. */
  const card = async (containers: string[], number = luhnCard(), metadata?: Record<string, string>) =>
    (
      await tokenize(t, owner, {
        type: 'card',
        data: cardData(number, { cvc: '321' }),
        containers,
        ...(metadata ? { metadata } : {}),
      }).expect(201)
    ).body.id as string;
  const authorizerWith = async (rules: unknown[]) =>
    newApplication(t, tenant.managementKey, { type: 'private', rules });
  const read = (key: string, id: string) => request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', key);
  const proxy = (key: string, id: string) =>
    request(t.http)
      .post('/proxy/charge')
      .set('BT-API-KEY', key)
      .set('BT-PROXY-URL', dest.url('/api'))
      .send({ card: `{{ token: ${id} }}`, number: `{{ ${id} | json: '$.number' }}` });

  it('the attack as reported: the session reads the token and sends it, CVC included, through /proxy; a token only in /pci/ still works for both', async () => {
    const authorizer = await authorizerWith([
      SECRET_CREATE,
      { priority: 2, container: '/pci/', permissions: ['token:create', 'token:use', 'token:read'] },
    ]);
    const both = await card(['/secret/', '/pci/'], secret);
    const session = await authorizedSession(t, pub, authorizer.key, {
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:read', 'token:use'] }],
    });

    // The authorizer itself is refused: 403 on read, 400 through the proxy, nothing sent.
    const own = await read(authorizer.key, both);
    expectProblem(own, 403);
    expectProblem(await proxy(authorizer.key, both), 400);
    expect(dest.received).toHaveLength(0);

    // So is the session, with the same answers.
    const got = await read(session, both);
    expectProblem(got, own.status);
    expect(JSON.stringify(got.body)).not.toContain(secret.slice(-4) + '"');
    const sent = await proxy(session, both);
    expectProblem(sent, 400);
    expect(sent.headers['bt-proxy-error']).toBe('true');
    expect(JSON.stringify(sent.body)).not.toContain(secret);
    expect(JSON.stringify(sent.body)).not.toContain('321');
    expect(dest.received).toHaveLength(0);
    expect(dest.connections).toBe(0);

    // The positive case: a token only in /pci/ is read and proxied by both, card and CVC.
    const pci = await card(['/pci/'], pciOnly);
    for (const key of [authorizer.key, session]) {
      expect((await read(key, pci).expect(200)).body.id).toBe(pci);
      await proxy(key, pci).expect(200);
    }
    expect(dest.received).toHaveLength(2);
    for (const received of dest.received) {
      const body = JSON.parse(received.body.toString('utf8'));
      expect(body.number).toBe(pciOnly);
      expect(body.card.cvc).toBe('321');
    }
  });

  it('update and delete: refused to the session as to the authorizer, and the token is left as it was', async () => {
    const authorizer = await authorizerWith([
      SECRET_CREATE,
      { priority: 2, container: '/pci/', permissions: ALL },
    ]);
    const both = await card(['/secret/', '/pci/']);
    const pci = await card(['/pci/']);
    const session = await authorizedSession(t, pub, authorizer.key, {
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:update', 'token:delete'] }],
    });
    const ownPatch = await patchToken(t, authorizer.key, both, { metadata: { by: 'authorizer' } });
    expectProblem(ownPatch, 403);
    expectProblem(await patchToken(t, session, both, { metadata: { by: 'session' } }), ownPatch.status);
    const ownDelete = await request(t.http).delete(`/tokens/${both}`).set('BT-API-KEY', authorizer.key);
    expectProblem(ownDelete, 403);
    expectProblem(
      await request(t.http).delete(`/tokens/${both}`).set('BT-API-KEY', session),
      ownDelete.status,
    );
    const kept = await read(owner, both).expect(200);
    expect(kept.body.metadata ?? {}).toEqual({});

    // Within what the authorizer may do, the session still updates and deletes.
    await patchToken(t, session, pci, { metadata: { by: 'session' } }).expect(200);
    await request(t.http).delete(`/tokens/${pci}`).set('BT-API-KEY', session).expect(204);
  });

  it('reveal: a session reveal rule on /pci/ does not read a token that the authorizer may not read at all', async () => {
    const authorizer = await authorizerWith([
      SECRET_CREATE,
      { priority: 2, container: '/pci/', permissions: ['token:read'], transform: 'reveal' },
    ]);
    const number = luhnCard();
    const both = await card(['/secret/', '/pci/'], number);
    const pci = await card(['/pci/'], pciOnly);
    const session = await authorizedSession(t, pub, authorizer.key, {
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'], transform: 'reveal' }],
    });
    const own = await read(authorizer.key, both);
    expectProblem(own, 403);
    const got = await read(session, both);
    expectProblem(got, own.status);
    expect(JSON.stringify(got.body)).not.toContain(number.slice(-4));

    // Where the authorizer reveals, the session reveals.
    expect((await read(session, pci).expect(200)).body.data.number).toBe(pciOnly);
  });

  it('list and search show the session only the tokens its authorizer may read (or search), counts included', async () => {
    const authorizer = await authorizerWith([
      SECRET_CREATE,
      { priority: 2, container: '/pci/', permissions: ALL },
    ]);
    const tag = { case: `list-${Date.now()}` };
    const both = await card(['/secret/', '/pci/'], luhnCard(), tag);
    const pci = await card(['/pci/'], luhnCard(), tag);
    const session = await authorizedSession(t, pub, authorizer.key, {
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:read', 'token:search'] }],
    });
    const ids = (res: request.Response) => (res.body.data as { id: string }[]).map((token) => token.id);
    const calls = (key: string) => [
      request(t.http).get(`/tokens?metadata.case=${tag.case}`).set('BT-API-KEY', key),
      request(t.http)
        .post('/tokens/search')
        .set('BT-API-KEY', key)
        .send({ query: `metadata.case:${tag.case}` }),
      request(t.http)
        .get(`/v2/tokens?metadata=${encodeURIComponent(JSON.stringify(tag))}`)
        .set('BT-API-KEY', key),
      request(t.http)
        .post('/v2/tokens/search')
        .set('BT-API-KEY', key)
        .send({ query: `metadata.case:${tag.case}` }),
    ];
    for (const key of [authorizer.key, session]) {
      const [list, search, listV2, searchV2] = await Promise.all(calls(key));
      for (const res of [list, search, listV2, searchV2]) {
        expect(res.status).toBe(200);
        expect(ids(res)).toEqual([pci]);
        expect(ids(res)).not.toContain(both);
      }
      expect(list.body.pagination.total_items).toBe(1);
      expect(search.body.pagination.total_items).toBe(1);
    }
  });

  it('deduplication: a session is not handed back a token its authorizer may not read', async () => {
    const authorizer = await authorizerWith([
      SECRET_CREATE,
      { priority: 2, container: '/pci/', permissions: ['token:create', 'token:read'] },
    ]);
    const number = luhnCard();
    const both = await card(['/secret/', '/pci/'], number);
    const session = await authorizedSession(t, pub, authorizer.key, {
      rules: [
        { priority: 1, container: '/pci/', permissions: ['token:create', 'token:read'] },
        { priority: 2, container: '/secret/', permissions: ['token:create'] },
      ],
    });
    const again = (key: string) =>
      tokenize(t, key, {
        type: 'card',
        data: cardData(number, { cvc: '321' }),
        containers: ['/secret/', '/pci/'],
        deduplicate_token: true,
      }).expect(201);
    expect((await again(authorizer.key)).body.id).not.toBe(both);
    const made = await again(session);
    expect(made.body.id).not.toBe(both);
    expect(JSON.stringify(made.body)).not.toContain(number);
  });

  it('a pre-configured proxy (BT-PROXY-KEY) detokenizes for the session only what the authorizer may use', async () => {
    const authorizer = await authorizerWith([
      SECRET_CREATE,
      { priority: 2, container: '/pci/', permissions: ['token:create', 'token:use', 'token:read'] },
    ]);
    const both = await card(['/secret/', '/pci/'], secret);
    const pci = await card(['/pci/'], pciOnly);
    const session = await authorizedSession(t, pub, authorizer.key, {
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:use'] }],
    });
    const made = await request(t.http)
      .post('/proxies')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'processor', destination_url: dest.url('/v1'), require_auth: true })
      .expect(201);
    const send = (key: string, id: string) =>
      request(t.http)
        .post('/proxy/pay')
        .set('BT-PROXY-KEY', made.body.key)
        .set('BT-API-KEY', key)
        .send({ card: `{{ token: ${id} }}` });

    expectProblem(await send(authorizer.key, both), 400);
    const refused = await send(session, both);
    expectProblem(refused, 400);
    expect(JSON.stringify(refused.body)).not.toContain(secret);
    expect(dest.received).toHaveLength(0);

    await send(session, pci).expect(200);
    expect(dest.received).toHaveLength(1);
    expect(JSON.parse(dest.received[0].body.toString('utf8')).card.number).toBe(pciOnly);
  });

  it('transactions: the session may neither pay with nor void on a token its authorizer may not use', async () => {
    const authorizer = await authorizerWith([
      SECRET_CREATE,
      { priority: 2, container: '/pci/', permissions: ['token:create', 'token:use', 'token:read'] },
    ]);
    const both = await card(['/secret/', '/pci/'], '4242424242424242');
    const session = await authorizedSession(t, pub, authorizer.key, {
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:use'] }],
    });
    const pay = (key: string) =>
      request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({ amount: 100, currency: 'USD', connection_id: connection, token: both });
    const own = await pay(authorizer.key);
    expect(own.status).toBeGreaterThanOrEqual(400);
    expect(own.status).toBeLessThan(500);
    const paid = await pay(session);
    expectProblem(paid, own.status);
    const count = async (): Promise<number> => {
      const rows: { n: number }[] = await db.query(
        'SELECT count(*)::int AS n FROM transactions WHERE tenant_id = $1 AND token_id = $2',
        [tenant.tenantId, both],
      );
      return rows[0].n;
    };
    expect(await count()).toBe(0);

    // A transaction the owner made with that token: voiding it needs token:use on the token.
    const tx = (await pay(owner).expect(201)).body.id as string;
    const voiding = (key: string) =>
      request(t.http).post(`/orchestration/transactions/${tx}/void`).set('BT-API-KEY', key).send({});
    const ownVoid = await voiding(authorizer.key);
    expect(ownVoid.status).toBeGreaterThanOrEqual(400);
    expect(ownVoid.status).toBeLessThan(500);
    expectProblem(await voiding(session), ownVoid.status);
    const after = await request(t.http)
      .get(`/orchestration/transactions/${tx}`)
      .set('BT-API-KEY', owner)
      .expect(200);
    expect(after.body.status).not.toBe('authorization_voided');
    expect(await count()).toBe(1);
  });

  it('the authorizer narrowed later (its rules replaced) takes effect at the session’s next use', async () => {
    const rules = [
      { priority: 2, container: '/pci/', permissions: ['token:create', 'token:use', 'token:read'] },
    ];
    const authorizer = await authorizerWith(rules);
    const held = await card(['/pci/', '/hold/']);
    const session = await authorizedSession(t, pub, authorizer.key, {
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:read', 'token:use'] }],
    });
    await read(session, held).expect(200);
    await proxy(session, held).expect(200);
    expect(dest.received).toHaveLength(1);
    dest.reset();

    // A rule of higher priority on /hold/ now withholds read and use on that token from the authorizer.
    await request(t.http)
      .put(`/applications/${authorizer.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .send({
        name: 'authorizer',
        rules: [{ priority: 1, container: '/hold/', permissions: ['token:create'] }, ...rules],
      })
      .expect(200);
    const own = await read(authorizer.key, held);
    expectProblem(own, 403);
    expectProblem(await read(session, held), own.status);
    expectProblem(await proxy(session, held), 400);
    expect(dest.received).toHaveLength(0);
  });
});
