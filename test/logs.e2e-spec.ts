import request from 'supertest';
import { DataSource } from 'typeorm';
import { AuditCheckpointer } from '../src/common/audit/audit-checkpointer.service';
import { AuditTrail } from '../src/common/audit/audit-trail.service';
import { RetentionJob } from '../src/common/jobs/retention.job';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';

interface Log {
  id: string;
  tenant_id: string;
  actor_id: string | null;
  actor_type: string;
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
  created_at: string;
}

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };

describe('audit logs', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let pvt: { id: string; key: string };

  beforeAll(async () => {
    t = await startApp();
    db = t.app.get(DataSource);
    tenant = await newTenant(t);
    pvt = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search'],
    });
  });
  afterAll(() => t.close());

  const logs = (query: Record<string, string | number> = {}, key = tenant.managementKey) =>
    request(t.http).get('/logs').set('BT-API-KEY', key).query(query);
  const entityLogs = async (entityId: string): Promise<Log[]> =>
    (await logs({ entity_id: entityId }).expect(200)).body.data;
  const countLogs = async (tenantId = tenant.tenantId): Promise<number> =>
    (await db.query('SELECT count(*)::int AS n FROM audit_logs WHERE tenant_id = $1', [tenantId]))[0].n;
  const tokenize = (body: unknown, key = pvt.key) =>
    request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .send(body as object);

  it('tokenizing 3 values writes 3 token create logs attributed to the application', async () => {
    const res = await tokenize({ a: 'one', b: 'two', c: { type: 'card', data: CARD } }).expect(201);
    const ids = [res.body.a, res.body.b, res.body.c.id] as string[];
    for (const id of ids) {
      const [log, ...rest] = await entityLogs(id);
      expect(rest).toEqual([]);
      expect(log).toEqual({
        id: expect.any(String),
        tenant_id: tenant.tenantId,
        actor_id: pvt.id,
        actor_type: 'application',
        entity_type: 'token',
        entity_id: id,
        operation: 'create',
        message: expect.stringContaining('Token created'),
        created_at: expect.any(String),
      });
    }
  });

  it('a rejected operation writes no log; reads, updates and deletes write theirs', async () => {
    const before = await countLogs();
    expectProblem(
      await tokenize({ a: 'ok', b: { type: 'card', data: { ...CARD, number: '4242424242424241' } } }),
      400,
    );
    expectProblem(await tokenize(Array.from({ length: 101 }, () => 'x')), 400);
    expect(await countLogs()).toBe(before);

    const created = await tokenize({ type: 'token', data: 'x' }).expect(201);
    const id = created.body.id as string;
    await request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', pvt.key).expect(200);
    // A failed update (bad body) leaves the token's log as it was.
    expectProblem(
      await request(t.http)
        .patch(`/tokens/${id}`)
        .set('BT-API-KEY', pvt.key)
        .send({ metadata: 'not an object' }),
      400,
    );
    await request(t.http)
      .patch(`/tokens/${id}`)
      .set('BT-API-KEY', pvt.key)
      .send({ metadata: { k: 'v' } })
      .expect(200);
    await request(t.http).delete(`/tokens/${id}`).set('BT-API-KEY', pvt.key).expect(204);
    expectProblem(await request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', pvt.key), 404);
    const operations = (await entityLogs(id)).map((l) => l.operation);
    expect(operations).toEqual(['delete', 'update', 'read', 'create']);
  });

  it('logs token lists and searches, applications, keys and the tenant', async () => {
    await request(t.http).get('/tokens').set('BT-API-KEY', pvt.key).expect(200);
    await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', pvt.key)
      .send({ query: 'type:card' })
      .expect(200);
    const tokenLogs: Log[] = (await logs({ entity_type: 'token', size: 5 }).expect(200)).body.data;
    expect(tokenLogs.slice(0, 2).map((l) => [l.operation, l.entity_id, l.message])).toEqual([
      ['search', null, 'Tokens searched'],
      ['read', null, 'Tokens listed'],
    ]);

    const app = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const mk = (method: 'get' | 'put' | 'post' | 'delete', path: string) =>
      request(t.http)[method](path).set('BT-API-KEY', tenant.managementKey);
    await mk('get', `/applications/${app.id}`).expect(200);
    await mk('put', `/applications/${app.id}`)
      .send({ name: 'renamed', permissions: ['token:create'] })
      .expect(200);
    const key = await mk('post', `/applications/${app.id}/keys`).expect(201);
    await mk('delete', `/applications/${app.id}/keys/${key.body.id}`).expect(204);
    await mk('delete', `/applications/${app.id}`).expect(204);
    const appLogs = await entityLogs(app.id);
    expect(appLogs.map((l) => [l.operation, l.message])).toEqual([
      ['delete', 'Application deleted'],
      ['update', `Application key ${key.body.id} revoked`],
      ['update', `Application key ${key.body.id} created`],
      ['update', 'Application updated'],
      ['read', 'Application read'],
      ['create', 'Application created'],
    ]);
    expect(appLogs.every((l) => l.actor_id === tenant.managementApplicationId)).toBe(true);

    await mk('get', '/tenants/self').expect(200);
    const tenantLogs = await entityLogs(tenant.tenantId);
    expect(tenantLogs.map((l) => l.operation)).toEqual(['read', 'create']);
  });

  it('names the public application as actor and the session in the message for session keys', async () => {
    const pub = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const session = (await request(t.http).post('/sessions').set('BT-API-KEY', pub.key).expect(201)).body;
    await request(t.http)
      .post('/sessions/authorize')
      .set('BT-API-KEY', pvt.key)
      .send({ nonce: session.nonce, permissions: ['token:create'] })
      .expect(204);
    const created = await tokenize({ type: 'token', data: 'via session' }, session.session_key).expect(201);

    const sessionLogs: Log[] = (await logs({ entity_type: 'session', size: 2 }).expect(200)).body.data;
    const [authorized, made] = sessionLogs;
    expect(made).toMatchObject({ operation: 'create', actor_id: pub.id, entity_id: authorized.entity_id });
    expect(authorized).toMatchObject({ operation: 'update', actor_id: pvt.id });
    expect(authorized.message).toContain('token:create');
    const sessionId = authorized.entity_id!;
    const [tokenLog] = await entityLogs(created.body.id);
    expect(tokenLog.actor_id).toBe(pub.id);
    expect(tokenLog.message).toContain(`session ${sessionId}`);
  });

  it('filters by entity type, entity id and date range', async () => {
    const a = await tokenize({ type: 'token', data: 'a' }).expect(201);
    const all: Log[] = (await logs({ size: 100 }).expect(200)).body.data;
    expect(all.every((l) => l.tenant_id === tenant.tenantId)).toBe(true);
    const types: Log[] = (await logs({ entity_type: 'application', size: 100 }).expect(200)).body.data;
    expect(types.length).toBeGreaterThan(0);
    expect(types.every((l) => l.entity_type === 'application')).toBe(true);
    expect((await entityLogs(a.body.id)).map((l) => l.entity_id)).toEqual([a.body.id]);

    const [newest] = await entityLogs(a.body.id);
    const at = newest.created_at;
    const inRange: Log[] = (
      await logs({ start_date: at, end_date: new Date(Date.parse(at) + 1).toISOString() }).expect(200)
    ).body.data;
    expect(inRange.map((l) => l.id)).toContain(newest.id);
    expect(inRange.every((l) => l.created_at === at)).toBe(true);
    // end_date is exclusive, start_date inclusive.
    const before: Log[] = (await logs({ end_date: at, size: 100 }).expect(200)).body.data;
    expect(before.map((l) => l.id)).not.toContain(newest.id);
    const future: Log[] = (
      await logs({ start_date: new Date(Date.now() + 60_000).toISOString() }).expect(200)
    ).body.data;
    expect(future).toEqual([]);
  });

  it('walks every row exactly once, newest first, with size=2, while new logs are written', async () => {
    const other = await newTenant(t, 'walker');
    const app = await newApplication(t, other.managementKey, {
      type: 'private',
      permissions: ['token:create'],
    });
    for (let i = 0; i < 4; i++) await tokenize(['a', 'b', 'c'], app.key).expect(201);
    const expected = (
      await db.query('SELECT id FROM audit_logs WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC', [
        other.tenantId,
      ])
    ).map((r: { id: string }) => r.id);
    expect(expected.length).toBeGreaterThanOrEqual(14);

    const seen: Log[] = [];
    let start: string | undefined;
    let pages = 0;
    do {
      const res = await logs(start ? { size: 2, start } : { size: 2 }, other.managementKey).expect(200);
      expect(res.body.pagination.page_size).toBe(2);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data);
      start = res.body.pagination.after;
      pages++;
      // New logs arrive between pages; they are newer than the walk's position and never show up in it.
      await tokenize(['new'], app.key).expect(201);
    } while (start);
    expect(pages).toBe(Math.ceil(expected.length / 2));
    expect(seen.map((l) => l.id)).toEqual(expected);
    for (let i = 1; i < seen.length; i++)
      expect(Date.parse(seen[i - 1].created_at)).toBeGreaterThanOrEqual(Date.parse(seen[i].created_at));
  });

  it('pages by number too', async () => {
    const other = await newTenant(t, 'numbered');
    const res = await logs({ page: 1, size: 1 }, other.managementKey).expect(200);
    expect(res.body.pagination).toEqual({ page_size: 1, page_number: 1, total_items: 2, total_pages: 2 });
    const second = await logs({ page: 2, size: 1 }, other.managementKey).expect(200);
    expect(second.body.data[0].id).not.toBe(res.body.data[0].id);
    expect((await logs({ page: 3, size: 1 }, other.managementKey).expect(200)).body.data).toEqual([]);
    expectProblem(await logs({ page: 1, start: 'abc' }, other.managementKey), 400);
  });

  it('refuses bad sizes, cursors, dates and filters with 400 naming the parameter', async () => {
    for (const [query, field] of [
      [{ size: 101 }, 'size'],
      [{ size: 0 }, 'size'],
      [{ start: 'garbage' }, 'start'],
      [{ start: Buffer.from('["x","y"]').toString('base64url') }, 'start'],
      [{ start_date: 'yesterday' }, 'start_date'],
      [{ end_date: '2026-13-01' }, 'end_date'],
      [{ entity_type: 'spaceship' }, 'entity_type'],
      [{ page: 0 }, 'page'],
    ] as const) {
      const res = await logs(query);
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toEqual([field]);
    }
  });

  it('lists entity types', async () => {
    const res = await request(t.http)
      .get('/logs/entity-types')
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(res.body).toEqual([
      { display_name: 'Token', value: 'token' },
      { display_name: 'Card', value: 'card' },
      { display_name: 'Bank', value: 'bank' },
      { display_name: 'Network token', value: 'network_token' },
      { display_name: 'Application', value: 'application' },
      { display_name: 'Tenant', value: 'tenant' },
      { display_name: 'Session', value: 'session' },
      { display_name: 'Connection', value: 'connection' },
      { display_name: 'Transaction', value: 'transaction' },
      { display_name: 'Proxy', value: 'proxy' },
      { display_name: 'Webhook', value: 'webhook' },
      { display_name: 'Flow rule', value: 'flow_rule' },
      { display_name: 'Buyer', value: 'buyer' },
      { display_name: 'Wallet merchant key', value: 'wallet_key' },
      { display_name: 'Relay refund', value: 'relay_refund' },
      { display_name: 'Token import', value: 'token_import' },
    ]);
  });

  it('needs log:read: private keys and management keys without it get 403', async () => {
    expectProblem(await logs({}, pvt.key), 403);
    expectProblem(await request(t.http).get('/logs/entity-types').set('BT-API-KEY', pvt.key), 403);
    const limited = await newApplication(t, tenant.managementKey, {
      type: 'management',
      permissions: ['tenant:read'],
    });
    expectProblem(await logs({}, limited.key), 403);
    expectProblem(await request(t.http).get('/logs'), 401);
  });

  it("never lists another tenant's logs, even filtered by their entity id", async () => {
    const other = await newTenant(t, 'other');
    const otherApp = await newApplication(t, other.managementKey, {
      type: 'private',
      permissions: ['token:create'],
    });
    const theirs = await tokenize({ type: 'token', data: 'theirs' }, otherApp.key).expect(201);
    expect(await entityLogs(theirs.body.id)).toEqual([]);
    const mine: Log[] = (await logs({ size: 100 }).expect(200)).body.data;
    expect(mine.every((l) => l.tenant_id === tenant.tenantId)).toBe(true);
    const theirLogs: Log[] = (await logs({ size: 100 }, other.managementKey).expect(200)).body.data;
    expect(theirLogs.every((l) => l.tenant_id === other.tenantId)).toBe(true);
    expect(theirLogs.map((l) => l.entity_id)).toContain(theirs.body.id);
  });

  it('is append-only: no route changes a log and the table refuses updates', async () => {
    const [log] = (await logs({ size: 1 }).expect(200)).body.data as Log[];
    for (const method of ['put', 'patch', 'delete'] as const)
      expect(
        (await request(t.http)[method](`/logs/${log.id}`).set('BT-API-KEY', tenant.managementKey)).status,
      ).toBe(404);
    await expect(db.query(`UPDATE audit_logs SET message = 'x' WHERE id = $1`, [log.id])).rejects.toThrow(
      /cannot be updated/,
    );
  });

  it('retention deletes only the oldest leaves of the tree: a row dated back behind younger ones stays', async () => {
    // Retention cuts the oldest rows in the order they were written (the tree's leaf order), so that the
    // tree keeps no hole; rows dated in the past but written after younger ones wait for those. The
    // deletion of aged rows, and the proofs that outlive it, are tested in test/audit-tree.e2e-spec.ts.
    const other = await newTenant(t, 'retention');
    const day = 86_400_000;
    await db.query(
      `INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at)
       VALUES (gen_random_uuid(), $1::uuid, NULL, 'application', 'tenant', $1::text, 'read', 'Tenant read', $2)`,
      [other.tenantId, new Date(Date.now() - 366 * day)],
    );
    expect(await countLogs(other.tenantId)).toBe(3);
    await t.app.get(AuditCheckpointer).run();
    await t.app.get(RetentionJob).runNow('log-retention');
    expect(await countLogs(other.tenantId)).toBe(3);
  });

  it('a change whose log cannot be written is rolled back: no token without its log', async () => {
    const before = (
      await db.query('SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1', [tenant.tenantId])
    )[0].n;
    // Only this tenant's change fails: a job of the app (settlement, imports, retention) may commit a change
    // of its own meanwhile, which must not take the failure.
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with its own `this`
    const write = AuditTrail.prototype.writeChange;
    let failed = false;
    const spy = jest.spyOn(AuditTrail.prototype, 'writeChange').mockImplementation(async function (
      this: AuditTrail,
      change: Parameters<AuditTrail['writeChange']>[0],
    ) {
      if (!failed && change.actor.tenantId === tenant.tenantId && change.entries.length) {
        failed = true;
        throw new Error('disk full');
      }
      return write.call(this, change);
    });
    try {
      expectProblem(await tokenize({ type: 'token', data: 'lost' }), 500);
    } finally {
      spy.mockRestore();
    }
    const after = (
      await db.query('SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1', [tenant.tenantId])
    )[0].n;
    expect(after).toBe(before);
  });
});
