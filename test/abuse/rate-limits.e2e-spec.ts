import { createHash, randomBytes } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/jobs/clock';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from '../support/app';
import { Destination } from '../support/destination';

/**
 * Fixed one-minute windows: start a test well inside one so that no window ends mid-test. Near a
 * window's end the service's clock moves to just past the next window's start.
 */
function awayFromMinuteEdge(t: TestApp, needMs = 15_000): void {
  const clock = t.app.get(Clock);
  const left = 60_000 - (clock.now().getTime() % 60_000);
  if (left < needMs) clock.advance(left + 100);
}

const digest = (value: string): string => createHash('sha256').update(value).digest('hex');

/** A key of the right shape that no application holds. */
const randomKey = (): string => `key_${randomBytes(24).toString('base64url')}`;

/**
 * Abuse class: rate limits counting header values. An anonymous request through a pre-configured proxy
 * without `require_auth` carrying a new random `BT-API-KEY` each time would be counted against that
 * value, never reach any limit and leave a counter row per value. Limits count principals: an invalid
 * key is a 401 before anything is counted for it, failed authentications are limited per client address,
 * and an anonymous proxy request counts against its proxy key.
 */
describe('abuse: rate limits count principals, not header values', () => {
  let t: TestApp;
  let db: DataSource;
  let dest: Destination;

  beforeAll(async () => {
    dest = await new Destination().start();
    t = await startApp({
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      RATE_LIMIT_PER_MINUTE: '5',
      AUTH_FAILURES_PER_MINUTE: '60',
    });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });

  const rateLimitKeys = async (): Promise<string[]> =>
    (await db.query<{ key: string }[]>('SELECT key FROM rate_limits')).map((r) => r.key);

  it('random BT-API-KEYs on an anonymous proxy are 401s, counted for no key; the 61st failure of one address is a 429', async () => {
    const tenant = await newTenant(t, 'random keys');
    const proxy = await request(t.http)
      .post('/proxies')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'Open', destination_url: dest.url(), require_auth: false })
      .expect(201);
    awayFromMinuteEdge(t);
    const sent = dest.received.length;
    const keys = Array.from({ length: 30 }, randomKey);
    const statuses: number[] = [];
    for (const key of keys)
      statuses.push(
        (await request(t.http).get('/proxy').set('BT-PROXY-KEY', proxy.body.key).set('BT-API-KEY', key))
          .status,
      );
    const counted = await rateLimitKeys();
    const rowsForKeys = keys.filter((key) => counted.includes(`default:${digest(key)}`)).length;
    process.stdout.write(
      `30 random BT-API-KEYs at a per-key limit of 5: ${statuses.filter((s) => s === 200).length} relayed, ` +
        `${statuses.filter((s) => s === 401).length} refused 401, ${rowsForKeys} rate_limits rows for them\n`,
    );
    const relayed = dest.received.length - sent;

    // 30 failures so far from this address; 30 more reach the limit, the next is a 429.
    const more: number[] = [];
    for (let i = 0; i < 30; i++)
      more.push((await request(t.http).get('/applications/key').set('BT-API-KEY', randomKey())).status);
    const limited = await request(t.http).get('/applications/key').set('BT-API-KEY', randomKey());
    process.stdout.write(`61st failed authentication from one address: ${limited.status}\n`);

    expect(statuses).toEqual(Array(30).fill(401));
    expect(relayed).toBe(0);
    expect(rowsForKeys).toBe(0);
    expect(JSON.stringify(counted)).not.toMatch(/key_/);
    expect(more).toEqual(Array(30).fill(401));
    expectProblem(limited, 429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.text).not.toMatch(/key_/);
  });
});

describe('abuse: rate limits still hold per key and per proxy key', () => {
  let t: TestApp;
  let dest: Destination;

  beforeAll(async () => {
    dest = await new Destination().start();
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '5' });
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });

  it('a valid key is limited per key, an anonymous proxy request per proxy key', async () => {
    const tenant = await newTenant(t, 'limited');
    const key = (
      await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:read'] })
    ).key;
    const proxy = await request(t.http)
      .post('/proxies')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'Open', destination_url: dest.url(), require_auth: false })
      .expect(201);
    awayFromMinuteEdge(t);
    const byKey: number[] = [];
    for (let i = 0; i < 6; i++)
      byKey.push((await request(t.http).get('/applications/key').set('BT-API-KEY', key)).status);
    expect(byKey).toEqual([200, 200, 200, 200, 200, 429]);

    const byProxy: number[] = [];
    for (let i = 0; i < 6; i++)
      byProxy.push((await request(t.http).get('/proxy').set('BT-PROXY-KEY', proxy.body.key)).status);
    expect(byProxy).toEqual([200, 200, 200, 200, 200, 429]);
  });
});

describe('abuse: random proxy keys are failed authentications, not counters', () => {
  let t: TestApp;
  let db: DataSource;

  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT_PER_MINUTE: '5', AUTH_FAILURES_PER_MINUTE: '10' });
    db = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  it('anonymous requests naming unknown proxy keys are 404s that leave no row each; past the failures of the address a 429', async () => {
    awayFromMinuteEdge(t);
    const keys = Array.from({ length: 10 }, () => `key_prx_${randomBytes(32).toString('hex').slice(0, 43)}`);
    const statuses: number[] = [];
    for (const key of keys)
      statuses.push((await request(t.http).get('/proxy').set('BT-PROXY-KEY', key)).status);
    const counted = (await db.query<{ key: string }[]>('SELECT key FROM rate_limits')).map((r) => r.key);
    const rowsForKeys = keys.filter((key) => counted.includes(`default:${digest(key)}`)).length;
    const next = await request(t.http).get('/proxy').set('BT-PROXY-KEY', keys[0]);
    process.stdout.write(
      `10 random proxy keys: statuses ${[...new Set(statuses)].join(',')}, ${rowsForKeys} rate_limits rows for them; 11th: ${next.status}\n`,
    );
    expect(statuses).toEqual(Array(10).fill(404));
    expect(rowsForKeys).toBe(0);
    expectProblem(next, 429);
    expect(next.headers['bt-proxy-error']).toBe('true');
  });
});
