import request from 'supertest';
import { DataSource } from 'typeorm';
import { hashApiKey } from '../src/common/auth/api-key';
import { Clock } from '../src/common/jobs/clock';
import { RetentionJob } from '../src/common/jobs/retention.job';
import { expectProblem, newApplication, newTenant, startAppAlone, TestApp, TestTenant } from './support/app';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };

describe('sessions', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let pub: string;
  let pvt: string;
  let pubId: string;

  beforeAll(async () => {
    t = await startAppAlone('sessions');
    db = t.app.get(DataSource);
    tenant = await newTenant(t);
    const pubApp = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    pub = pubApp.key;
    pubId = pubApp.id;
    pvt = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:update'],
      })
    ).key;
  });
  afterAll(() => t.close());

  const createSession = async (key = pub) => {
    const res = await request(t.http).post('/sessions').set('BT-API-KEY', key).expect(201);
    return res.body as { session_key: string; nonce: string; expires_at: string };
  };
  const authorize = (body: Record<string, unknown>, key = pvt) =>
    request(t.http).post('/sessions/authorize').set('BT-API-KEY', key).send(body);
  const tokenize = (key: string, body: unknown = { type: 'card', data: CARD }) =>
    request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .send(body as object);
  const getToken = (key: string, id: string) => request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', key);

  it('walks the flow: create, 403 before authorize, authorize, tokenize, 403 for what was not granted', async () => {
    // Three minutes from the moment it was created, whenever within the request that was (however slow).
    const before = t.app.get(Clock).now().getTime();
    const session = await createSession();
    const after = t.app.get(Clock).now().getTime();
    expect(session.session_key).toMatch(/^key_ses_[0-9A-Za-z]{40,50}$/);
    expect(typeof session.nonce).toBe('string');
    expect(Date.parse(session.expires_at)).toBeGreaterThanOrEqual(before + 180_000);
    expect(Date.parse(session.expires_at)).toBeLessThanOrEqual(after + 180_000);

    expectProblem(await tokenize(session.session_key), 403);
    expectProblem(await request(t.http).get('/applications/key').set('BT-API-KEY', session.session_key), 403);

    await authorize({ nonce: session.nonce, permissions: ['token:create'] }).expect(204);
    const created = await tokenize(session.session_key).expect(201);
    expect(created.body.created_by).toBe(pubId);
    expectProblem(await getToken(session.session_key, created.body.id), 403);
    await getToken(pvt, created.body.id).expect(200);

    const again = await authorize({ nonce: session.nonce, permissions: ['token:read'] });
    expectProblem(again, 400);
    expect(again.body.errors).toHaveProperty('nonce');
    // The failed second authorization granted nothing.
    expectProblem(await getToken(session.session_key, created.body.id), 403);
  });

  it('stores the session key and nonce only as digests', async () => {
    const session = await createSession();
    const dump = JSON.stringify(await db.query('SELECT * FROM sessions'));
    expect(dump).not.toContain(session.session_key);
    expect(dump).not.toContain(session.nonce);
  });

  it('refuses an authorization that grants nothing, an unknown nonce and bad fields', async () => {
    const session = await createSession();
    const empty = await authorize({ nonce: session.nonce, permissions: [], rules: [] });
    expectProblem(empty, 400);
    expect(empty.body.errors).toHaveProperty('permissions');
    expectProblem(await authorize({ nonce: session.nonce }), 400);
    const unknown = await authorize({ nonce: 'not-a-nonce', permissions: ['token:read'] });
    expectProblem(unknown, 400);
    expect(unknown.body.errors).toHaveProperty('nonce');
    const bad = await authorize({
      nonce: session.nonce,
      permissions: ['token:read'],
      expires_at: 'tomorrow',
      extra: 1,
    });
    expectProblem(bad, 400);
    expect(Object.keys(bad.body.errors).sort()).toEqual(['expires_at', 'extra']);
    // None of the refusals used the nonce up.
    await authorize({ nonce: session.nonce, permissions: ['token:read'] }).expect(204);
  });

  it('refuses privilege escalation: a permission the private application lacks, or a management one', async () => {
    const session = await createSession();
    const lacking = await authorize({ nonce: session.nonce, permissions: ['token:create', 'token:delete'] });
    expectProblem(lacking, 400);
    expect(lacking.body.errors).toEqual({
      'permissions[1]': [expect.stringContaining('token:delete')],
    });
    const mgmt = await authorize({ nonce: session.nonce, permissions: ['application:create'] });
    expectProblem(mgmt, 400);
    expect(mgmt.body.errors['permissions[0]'][0]).toContain('application:create');
    const viaRule = await authorize({
      nonce: session.nonce,
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:search'] }],
    });
    expectProblem(viaRule, 400);
    expect(viaRule.body.errors).toHaveProperty(['rules[0].permissions[0]']);

    // A rule-scoped private application may only grant inside what its own rules cover.
    const scoped = await newApplication(t, tenant.managementKey, {
      type: 'private',
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'] }],
    });
    const outside = await authorize(
      { nonce: session.nonce, rules: [{ priority: 1, container: '/general/', permissions: ['token:read'] }] },
      scoped.key,
    );
    expectProblem(outside, 400);
    await authorize(
      {
        nonce: session.nonce,
        rules: [{ priority: 1, container: '/pci/high/', permissions: ['token:read'] }],
      },
      scoped.key,
    ).expect(204);
  });

  it('a session whose rule grants token:read on one token id reads that token only', async () => {
    const mine = await tokenize(pvt).expect(201);
    const other = await tokenize(pvt).expect(201);
    const session = await createSession();
    await authorize({
      nonce: session.nonce,
      rules: [
        {
          priority: 1,
          conditions: [{ attribute: 'id', operator: 'equals', value: mine.body.id }],
          permissions: ['token:read'],
        },
      ],
    }).expect(204);
    const read = await getToken(session.session_key, mine.body.id).expect(200);
    expect(read.body.mask.number).toBe('XXXXXXXXXXXX4242');
    const refused = await getToken(session.session_key, other.body.id);
    expect([403, 404]).toContain(refused.status);
    expectProblem(refused, refused.status);
    // The rule grants read only: no update through it.
    expectProblem(
      await request(t.http)
        .patch(`/tokens/${mine.body.id}`)
        .set('BT-API-KEY', session.session_key)
        .send({ metadata: { a: 'b' } }),
      403,
    );
  });

  it('session rules with type and container conditions', async () => {
    const card = await tokenize(pvt).expect(201);
    const text = await tokenize(pvt, { type: 'token', data: 'x', containers: ['/general/'] }).expect(201);
    const session = await createSession();
    await authorize({
      nonce: session.nonce,
      rules: [
        {
          priority: 1,
          conditions: [
            { attribute: 'type', operator: 'equals', value: 'token' },
            { attribute: 'container', operator: 'starts_with', value: '/general/' },
          ],
          permissions: ['token:read'],
          transform: 'redact',
        },
      ],
    }).expect(204);
    const read = await getToken(session.session_key, text.body.id).expect(200);
    expect(read.body).not.toHaveProperty('data');
    expect(read.body).not.toHaveProperty('mask');
    expect([403, 404]).toContain((await getToken(session.session_key, card.body.id)).status);
  });

  it('expires: an expires_at a minute ahead, then 401; the job deletes the row', async () => {
    const session = await createSession();
    // A minute, not a second: the authorization and the first tokenize must land before it on a loaded
    // machine too; the expiry itself is reached by moving the service's clock, not by waiting.
    const clock = t.app.get(Clock);
    await authorize({
      nonce: session.nonce,
      permissions: ['token:create'],
      expires_at: new Date(clock.now().getTime() + 60_000).toISOString(),
    }).expect(204);
    await tokenize(session.session_key).expect(201);
    const exists = async (key: string) =>
      (await db.query('SELECT count(*)::int AS n FROM sessions WHERE key_hash = $1', [hashApiKey(key)]))[0]
        .n === 1;
    // The minute passes on the service's clock (the key resolver and the job both read it).
    clock.advance(60_100);
    let fresh: Awaited<ReturnType<typeof createSession>>;
    try {
      expectProblem(await tokenize(session.session_key), 401);
      fresh = await createSession();
      await t.app.get(RetentionJob).runNow('expired-sessions');
      expect(await exists(session.session_key)).toBe(false);
      expect(await exists(fresh.session_key)).toBe(true);
      // Three minutes on, the fresh session is gone too.
      clock.advance(3 * 60_000 + 1000);
      await t.app.get(RetentionJob).runNow('expired-sessions');
    } finally {
      clock.reset();
    }
    expect(await exists(fresh.session_key)).toBe(false);
    expectProblem(await tokenize(fresh.session_key), 401);
    expectProblem(await tokenize(session.session_key), 401);
  });

  it('an unauthorized session expires after 3 minutes and its nonce stops working', async () => {
    const session = await createSession();
    const clock = t.app.get(Clock);
    clock.advance(3 * 60_000 + 1);
    try {
      expectProblem(await tokenize(session.session_key), 401);
      const late = await authorize({ nonce: session.nonce, permissions: ['token:create'] });
      expectProblem(late, 400);
    } finally {
      clock.reset();
    }
  });

  it('checks expires_at against now and 24 hours after creation', async () => {
    const session = await createSession();
    const past = await authorize({
      nonce: session.nonce,
      permissions: ['token:create'],
      expires_at: new Date(Date.now() - 1000).toISOString(),
    });
    expectProblem(past, 400);
    expect(past.body.errors).toHaveProperty('expires_at');
    const far = await authorize({
      nonce: session.nonce,
      permissions: ['token:create'],
      expires_at: new Date(Date.now() + 25 * 60 * 60_000).toISOString(),
    });
    expectProblem(far, 400);
    expect(far.body.errors).toHaveProperty('expires_at');
    const expiresAt = new Date(Date.now() + 23 * 60 * 60_000);
    await authorize({
      nonce: session.nonce,
      permissions: ['token:create'],
      expires_at: expiresAt.toISOString(),
    }).expect(204);
    const rows = await db.query(
      'SELECT expires_at FROM sessions WHERE tenant_id = $1 ORDER BY created_at DESC',
      [tenant.tenantId],
    );
    expect(rows.map((r: { expires_at: Date }) => r.expires_at.getTime())).toContain(expiresAt.getTime());
  });

  it('only a public key creates and only a private key authorizes', async () => {
    expectProblem(await request(t.http).post('/sessions').set('BT-API-KEY', pvt), 403);
    expectProblem(await request(t.http).post('/sessions').set('BT-API-KEY', tenant.managementKey), 403);
    expectProblem(await request(t.http).post('/sessions'), 401);
    const session = await createSession();
    expectProblem(await authorize({ nonce: session.nonce, permissions: ['token:create'] }, pub), 403);
    expectProblem(
      await authorize({ nonce: session.nonce, permissions: ['token:create'] }, tenant.managementKey),
      403,
    );
    expectProblem(
      await authorize({ nonce: session.nonce, permissions: ['token:create'] }, session.session_key),
      403,
    );
    // A session key cannot create sessions either.
    await authorize({ nonce: session.nonce, permissions: ['token:create'] }).expect(204);
    expectProblem(await request(t.http).post('/sessions').set('BT-API-KEY', session.session_key), 403);
  });

  it('another tenant can neither authorize nor use a session', async () => {
    const other = await newTenant(t, 'other');
    const otherPvt = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
    ).key;
    const session = await createSession();
    const res = await authorize({ nonce: session.nonce, permissions: ['token:create'] }, otherPvt);
    expectProblem(res, 400);
    await authorize({ nonce: session.nonce, permissions: ['token:read'] }).expect(204);
    const theirs = await tokenize(otherPvt).expect(201);
    expect((await getToken(session.session_key, theirs.body.id)).status).toBe(404);
  });

  it('deleting the public application ends its sessions', async () => {
    const app = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const session = await createSession(app.key);
    await authorize({ nonce: session.nonce, permissions: ['token:create'] }).expect(204);
    await tokenize(session.session_key).expect(201);
    await request(t.http)
      .delete(`/applications/${app.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(204);
    expectProblem(await tokenize(session.session_key), 401);
  });
});
