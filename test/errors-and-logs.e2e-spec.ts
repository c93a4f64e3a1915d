import request from 'supertest';
import { ApplicationsService } from '../src/modules/applications/applications.service';
import { expectProblem, newTenant, startApp, TestApp, TestTenant } from './support/app';

describe('errors, trace ids and logs', () => {
  let t: TestApp;
  let tenant: TestTenant;

  beforeAll(async () => {
    t = await startApp();
    tenant = await newTenant(t);
  });
  afterAll(() => t.close());

  it('answers malformed JSON with a 400 problem that does not quote the body', async () => {
    const res = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .set('Content-Type', 'application/json')
      .send('{"name": 4242424242424242x');
    expectProblem(res, 400);
    expect(res.body.code).toBe('malformed_json');
    expect(res.text).not.toContain('4242424242424242');
  });

  it('refuses JSON nested deeper than 32 levels with a 400 (found by fuzzing: it overflowed the stack)', async () => {
    const body = `${'{"k":'.repeat(5000)}1${'}'.repeat(5000)}`;
    const res = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', tenant.managementKey)
      .set('Content-Type', 'application/json')
      .send(body);
    expectProblem(res, 400);
    expect(res.body.code).toBe('too_deep');
  });

  it('keeps __proto__ and other hostile names as plain field paths (found by fuzzing)', async () => {
    const app = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'reader', type: 'private', permissions: ['token:read'] })
      .expect(201);
    const res = await request(t.http)
      .get('/v2/tokens?__proto__=x&constructor=y')
      .set('BT-API-KEY', app.body.key);
    expectProblem(res, 400);
    expect(Object.keys(res.body.errors).sort()).toEqual(['__proto__', 'constructor']);
    const body = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', tenant.managementKey)
      .set('Content-Type', 'application/json')
      .send('{"__proto__": {"type": "card", "data": 5}}');
    expect(body.status).toBeLessThan(500);
  });

  it('answers a 2 MiB body with 413', async () => {
    const res = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024), type: 'private' }));
    expectProblem(res, 413);
  });

  it('accepts a body just under 1 MiB as far as the parser goes', async () => {
    const res = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'x'.repeat(1000 * 1000), type: 'private' });
    expectProblem(res, 400);
    expect(res.body.errors).toHaveProperty('name');
  });

  it('answers unknown routes with a 404 problem that carries a code and does not echo the path', async () => {
    for (const res of [
      await request(t.http).get('/no/such/route/4242424242424242'),
      await request(t.http).patch('/applications'),
    ]) {
      expectProblem(res, 404);
      expect(res.body.code).toBe('not_found');
      expect(res.text).not.toContain('4242424242424242');
    }
  });

  it('echoes a valid BT-TRACE-ID and generates one otherwise', async () => {
    const given = await request(t.http).get('/health/live').set('BT-TRACE-ID', 'trace-abc-123').expect(200);
    expect(given.headers['bt-trace-id']).toBe('trace-abc-123');
    const generated = await request(t.http).get('/health/live').expect(200);
    expect(generated.headers['bt-trace-id']).toMatch(/^[0-9a-f-]{36}$/);
    const invalid = await request(t.http).get('/health/live').set('BT-TRACE-ID', 'x'.repeat(200)).expect(200);
    expect(invalid.headers['bt-trace-id']).toMatch(/^[0-9a-f-]{36}$/);
    const onError = await request(t.http).get('/applications').set('BT-TRACE-ID', 'trace-on-401');
    expect(onError.status).toBe(401);
    expect(onError.headers['bt-trace-id']).toBe('trace-on-401');
    const onParseError = await request(t.http)
      .post('/applications')
      .set('BT-TRACE-ID', 'trace-on-bad-json')
      .set('Content-Type', 'application/json')
      .send('{');
    expect(onParseError.headers['bt-trace-id']).toBe('trace-on-bad-json');
  });

  it('puts the trace id in every log line of a request and never logs the key or the body', async () => {
    const traceId = `trace-${Date.now()}`;
    await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .set('BT-TRACE-ID', traceId)
      .send({ name: 'secret-looking-name-4111111111111111', type: 'private' })
      .expect(201);
    const lines = t.logs.filter((line) => line.includes(traceId));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(JSON.parse(line).trace_id).toBe(traceId);
    const all = t.logs.join('\n');
    expect(all).not.toContain(tenant.managementKey);
    expect(all).not.toContain('4111111111111111');
  });

  it('reports validation failures with an errors map of field paths', async () => {
    const res = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .send({
        name: 7,
        type: 'private',
        rules: [{ priority: 'high', container: '/pci/', permissions: ['token:read'] }],
      });
    expectProblem(res, 400);
    expect(res.body.code).toBe('validation_failed');
    expect(Object.keys(res.body.errors).sort()).toEqual(['name', 'rules[0].priority']);
  });

  it('answers an unexpected failure with a 500 that hides internals, and logs it with the trace id', async () => {
    const spy = jest
      .spyOn(t.app.get(ApplicationsService), 'list')
      .mockRejectedValueOnce(new Error('connection to db-internal.example:5432 refused'));
    const res = await request(t.http)
      .get('/applications')
      .set('BT-API-KEY', tenant.managementKey)
      .set('BT-TRACE-ID', 'trace-500');
    spy.mockRestore();
    expectProblem(res, 500);
    expect(res.body).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An unexpected error occurred.',
      trace_id: 'trace-500',
    });
    expect(res.text).not.toContain('db-internal');
    const logged = t.logs.filter((line) => line.includes('db-internal')).map((line) => JSON.parse(line));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.every((line) => line.trace_id === 'trace-500')).toBe(true);
  });

  it('serves liveness and readiness without a key', async () => {
    const live = await request(t.http).get('/health/live').expect(200);
    expect(live.body.status).toBe('ok');
    const ready = await request(t.http).get('/health/ready').expect(200);
    expect(ready.body).toMatchObject({ status: 'ok', details: { database: { status: 'up' } } });
  });
});
