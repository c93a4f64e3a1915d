import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { Clock } from '../src/common/jobs/clock';
import { RetentionJob } from '../src/common/jobs/retention.job';
import { IdempotencyService } from '../src/modules/idempotency/idempotency.service';
import {
  expectProblem,
  newApplication,
  newTenant,
  startApp,
  startAppAlone,
  TestApp,
  TestTenant,
} from './support/app';

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
const KEY_HEADER = 'BT-IDEMPOTENCY-KEY';

describe('idempotency', () => {
  let t: Awaited<ReturnType<typeof startAppAlone>>;
  let db: DataSource;
  let tenant: TestTenant;
  let pvt: { id: string; key: string };

  beforeAll(async () => {
    t = await startAppAlone('idempotency');
    db = t.app.get(DataSource);
    tenant = await newTenant(t);
    pvt = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:update', 'token:search'],
    });
  });
  afterAll(() => t.close());

  const tokenize = (body: unknown, idempotencyKey?: string, apiKey = pvt.key, http = t.http) => {
    const req = request(http).post('/tokenize').set('BT-API-KEY', apiKey);
    if (idempotencyKey !== undefined) req.set(KEY_HEADER, idempotencyKey);
    return req.send(body as object);
  };
  const count = async (table: string, tenantId = tenant.tenantId): Promise<number> =>
    (await db.query(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [tenantId]))[0].n;

  it('replays a tokenize byte for byte, with the same token ids, creating nothing', async () => {
    const key = randomUUID();
    const body = { card: { type: 'card', data: CARD }, email: 'jane@example.com' };
    const first = await tokenize(body, key).expect(201);
    expect(first.headers['bt-idempotency-replayed']).toBeUndefined();
    const tokens = await count('tokens');
    const logs = await count('audit_logs');
    const again = await tokenize(body, key).expect(201);
    expect(again.headers['bt-idempotency-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(again.body.card.id).toBe(first.body.card.id);
    expect(again.body.email).toBe(first.body.email);
    expect(await count('tokens')).toBe(tokens);
    // Nothing happened on the replay, so nothing is logged.
    expect(await count('audit_logs')).toBe(logs);
    // The same body with keys in another order is the same request.
    const reordered = await tokenize(
      { email: 'jane@example.com', card: { data: CARD, type: 'card' } },
      key,
    ).expect(201);
    expect(reordered.text).toBe(first.text);
  });

  it('a failed first attempt releases the key: the valid retry is processed', async () => {
    const key = randomUUID();
    expectProblem(await tokenize({ type: 'card', data: { ...CARD, number: '4242424242424241' } }, key), 400);
    const retry = await tokenize({ type: 'card', data: CARD }, key).expect(201);
    expect(retry.headers['bt-idempotency-replayed']).toBeUndefined();
    const replay = await tokenize({ type: 'card', data: CARD }, key).expect(201);
    expect(replay.body.id).toBe(retry.body.id);
  });

  it('the same key with a different body or path is a 422', async () => {
    const key = randomUUID();
    await tokenize({ type: 'token', data: 'one' }, key).expect(201);
    const different = await tokenize({ type: 'token', data: 'two' }, key);
    expectProblem(different, 422);
    const otherPath = await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', pvt.key)
      .set(KEY_HEADER, key)
      .send({ type: 'token', data: 'one' });
    expectProblem(otherPath, 422);
  });

  it('scopes keys to the tenant and the calling application', async () => {
    const key = randomUUID();
    const body = { type: 'token', data: 'scoped' };
    const mine = await tokenize(body, key).expect(201);
    const sibling = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:create'],
    });
    const theirs = await tokenize(body, key, sibling.key).expect(201);
    expect(theirs.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(theirs.body.id).not.toBe(mine.body.id);
    const other = await newTenant(t, 'other');
    const otherApp = await newApplication(t, other.managementKey, {
      type: 'private',
      permissions: ['token:create'],
    });
    const foreign = await tokenize(body, key, otherApp.key).expect(201);
    expect(foreign.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(foreign.body.tenant_id).toBe(other.tenantId);
  });

  it('ignores the header on GET and DELETE, even malformed', async () => {
    const created = await tokenize({ type: 'token', data: 'g' }).expect(201);
    for (let i = 0; i < 2; i++) {
      const res = await request(t.http)
        .get(`/tokens/${created.body.id}`)
        .set('BT-API-KEY', pvt.key)
        .set(KEY_HEADER, 'x'.repeat(300))
        .expect(200);
      expect(res.headers['bt-idempotency-replayed']).toBeUndefined();
    }
    expect(
      await db.query('SELECT 1 FROM idempotency_records WHERE tenant_id = $1 AND response_status = 200', [
        tenant.tenantId,
      ]),
    ).toEqual([]);
  });

  it('refuses a malformed key with a 400 naming the header', async () => {
    for (const bad of ['x'.repeat(256), 'a\tb']) {
      const res = await tokenize({ type: 'token', data: 'm' }, bad);
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toEqual(['BT-IDEMPOTENCY-KEY']);
    }
    await tokenize({ type: 'token', data: 'm' }, 'x'.repeat(255)).expect(201);
  });

  it('a record past 24 hours is ignored (processed as new) and the job deletes it (clock injected)', async () => {
    const key = randomUUID();
    const first = await tokenize({ type: 'token', data: 'old' }, key).expect(201);
    const clock = t.app.get(Clock);
    clock.advance(24 * 60 * 60_000 + 1000);
    try {
      const later = await tokenize({ type: 'token', data: 'old' }, key).expect(201);
      expect(later.headers['bt-idempotency-replayed']).toBeUndefined();
      expect(later.body.id).not.toBe(first.body.id);
      const stale = await count('idempotency_records');
      clock.advance(24 * 60 * 60_000 + 1000);
      await t.app.get(RetentionJob).runNow('idempotency-records');
      expect(await count('idempotency_records')).toBeLessThan(stale);
    } finally {
      clock.reset();
    }
  });

  it('a claim left by a crashed request is taken over after 60 seconds; before that it is a 409', async () => {
    const key = randomUUID();
    const body = { type: 'token', data: 'crash' };
    // What a process that died mid-request leaves: a claim and no response.
    const service = t.app.get(IdempotencyService);
    const who = { tenantId: tenant.tenantId, applicationId: pvt.id } as Parameters<
      typeof service.scopeFor
    >[0];
    const scope = await service.scopeFor(who, key, { method: 'POST', path: '/tokenize', body });
    const claim = await service.claim(scope);
    expect(claim.kind).toBe('claimed');

    const busy = await tokenize(body, key);
    expectProblem(busy, 409);
    expect(busy.headers['retry-after']).toBe('1');
    const clock = t.app.get(Clock);
    clock.advance(61_000);
    try {
      const taken = await tokenize(body, key).expect(201);
      expect(taken.headers['bt-idempotency-replayed']).toBeUndefined();
      const replay = await tokenize(body, key).expect(201);
      expect(replay.body.id).toBe(taken.body.id);
    } finally {
      clock.reset();
    }
  });

  it('an operation whose claim was taken over is rolled back: one effect only', async () => {
    const key = randomUUID();
    const before = await count('tokens');
    // The record is completed under another claim id: what finds it when a retry has taken it over.
    const service = t.app.get(IdempotencyService);
    // (The tokenize's change completes the record through `completeIn`.)
    const complete = service.completeWithChange.bind(service);
    const spy = jest
      .spyOn(service, 'completeWithChange')
      .mockImplementationOnce((change, scope, _claimId, response, takenOver) =>
        complete(change, scope, randomUUID(), response, takenOver),
      );
    try {
      expectProblem(await tokenize({ type: 'token', data: 'late' }, key), 409);
    } finally {
      spy.mockRestore();
    }
    expect(await count('tokens')).toBe(before);
    await tokenize({ type: 'token', data: 'late' }, key).expect(201);
    expect(await count('tokens')).toBe(before + 1);
  });

  it('stores no clear secret: tokenize records hold masked data, key-creating responses are not stored', async () => {
    const key = randomUUID();
    const res = await tokenize(
      { type: 'card', data: { ...CARD, number: '5555555555554444', cvc: '987' } },
      key,
    ).expect(201);
    expect(res.text).not.toContain('5555555555554444');
    const created = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .set(KEY_HEADER, key)
      .send({ name: 'idem', type: 'private', permissions: ['token:read'] })
      .expect(201);
    const replay = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .set(KEY_HEADER, key)
      .send({ name: 'idem', type: 'private', permissions: ['token:read'] })
      .expect(201);
    // A route that answers a new key ignores the idempotency key: a retry makes another key.
    expect(replay.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(replay.body.key).not.toBe(created.body.key);
    const rows = await db.query('SELECT * FROM idempotency_records WHERE tenant_id = $1', [tenant.tenantId]);
    const dump =
      JSON.stringify(rows) +
      rows.map((r: { response_body: Buffer | null }) => r.response_body?.toString('latin1') ?? '').join('');
    for (const secret of ['5555555555554444', created.body.key as string, key, 'XXXXXXXXXXXX4444'])
      expect({ secret, stored: dump.includes(secret) }).toEqual({ secret, stored: false });
  });

  it('replays a 204 (session authorization) with no body', async () => {
    const pub = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const session = (await request(t.http).post('/sessions').set('BT-API-KEY', pub.key).expect(201)).body;
    const key = randomUUID();
    const send = () =>
      request(t.http)
        .post('/sessions/authorize')
        .set('BT-API-KEY', pvt.key)
        .set(KEY_HEADER, key)
        .send({ nonce: session.nonce, permissions: ['token:create'] });
    const first = await send().expect(204);
    const second = await send().expect(204);
    expect(first.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(second.headers['bt-idempotency-replayed']).toBe('true');
    expect(second.text).toBe('');
  });

  describe('50 identical requests at once', () => {
    const fire = async (servers: TestApp['http'][]) => {
      const key = randomUUID();
      const body = { type: 'token', data: `burst-${key}` };
      const before = await count('tokens');
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) => tokenize(body, key, pvt.key, servers[i % servers.length])),
      );
      const statuses = responses.map((r) => r.status);
      const processed = responses.filter((r) => r.status === 201 && !r.headers['bt-idempotency-replayed']);
      const replayed = responses.filter(
        (r) => r.status === 201 && r.headers['bt-idempotency-replayed'] === 'true',
      );
      const busy = responses.filter((r) => r.status === 409);
      process.stdout.write(
        `idempotency burst on ${servers.length} instance(s): ${processed.length} processed, ${replayed.length} replayed, ${busy.length} 409\n`,
      );
      expect(processed).toHaveLength(1);
      expect(processed.length + replayed.length + busy.length).toBe(50);
      expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
      expect(busy.every((r) => r.headers['retry-after'] === '1')).toBe(true);
      expect(new Set(replayed.map((r) => r.body.id))).toEqual(
        new Set(replayed.length ? [processed[0].body.id] : []),
      );
      expect(await count('tokens')).toBe(before + 1);
      const rows = await db.query(`SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1 AND id = $2`, [
        tenant.tenantId,
        processed[0].body.id,
      ]);
      expect(rows[0].n).toBe(1);
    };

    it('on one instance: one processed, the rest 409 or the replay', () => fire([t.http]));

    it('on two instances sharing the database', async () => {
      const second = await startApp({ DATABASE_URL: t.databaseUrl });
      try {
        await fire([t.http, second.http]);
      } finally {
        await second.close();
      }
    });
  });
});
