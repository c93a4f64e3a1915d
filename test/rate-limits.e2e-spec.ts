import { createHash } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { Clock } from '../src/common/jobs/clock';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from './support/app';

/**
 * Fixed one-minute windows: start a test well inside one so that no window ends mid-test. Near a
 * window's end both services' clocks move (by the same step) to just past the next window's start.
 */
function awayFromMinuteEdge(...apps: TestApp[]): void {
  const left = 60_000 - (apps[0].app.get(Clock).now().getTime() % 60_000);
  if (left < 8_000) for (const t of apps) t.app.get(Clock).advance(left + 100);
}

describe('rate limits per API key, shared by instances', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await startApp({ RATE_LIMIT_PER_MINUTE: '10' });
    b = await startApp({ RATE_LIMIT_PER_MINUTE: '10' });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('answers 429 problem+json with Retry-After past the limit; other keys and keyless routes are not affected', async () => {
    const tenant = await newTenant(a, 'limited');
    const key = (
      await newApplication(a, tenant.managementKey, { type: 'private', permissions: ['token:create'] })
    ).key;
    const other = (
      await newApplication(a, tenant.managementKey, { type: 'private', permissions: ['token:create'] })
    ).key;
    awayFromMinuteEdge(a, b);
    for (let i = 0; i < 10; i++) {
      const ok = await request(a.http).get('/applications/key').set('BT-API-KEY', key);
      expect(ok.status).toBe(200);
      expect(ok.headers['x-ratelimit-limit']).toBe('10');
    }
    const limited = await request(a.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .send({ type: 'token', data: 'x' });
    expectProblem(limited, 429);
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    await request(a.http).get('/applications/key').set('BT-API-KEY', other).expect(200);
    for (let i = 0; i < 15; i++) await request(a.http).get('/health/live').expect(200);

    // The shared counter is keyed by the key's digest, never the key.
    const rows: { key: string }[] = await a.app.get(DataSource).query('SELECT key FROM rate_limits');
    const digest = createHash('sha256').update(key).digest('hex');
    expect(rows.map((r) => r.key)).toContain(`default:${digest}`);
    expect(JSON.stringify(rows)).not.toContain(key);
  });

  it('counts one key across two instances on one database', async () => {
    const tenant = await newTenant(a, 'two instances');
    const key = (
      await newApplication(a, tenant.managementKey, { type: 'private', permissions: ['token:read'] })
    ).key;
    awayFromMinuteEdge(a, b);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      statuses.push((await request(a.http).get('/applications/key').set('BT-API-KEY', key)).status);
      statuses.push((await request(b.http).get('/applications/key').set('BT-API-KEY', key)).status);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(4);
  });
});
