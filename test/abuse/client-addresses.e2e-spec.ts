import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { Clock } from '../../src/common/jobs/clock';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from '../support/app';

/** Fixed one-minute windows: start a test well inside one so that no window ends mid-test. */
function awayFromMinuteEdge(t: TestApp, needMs = 15_000): void {
  const clock = t.app.get(Clock);
  const left = 60_000 - (clock.now().getTime() % 60_000);
  if (left < needMs) clock.advance(left + 100);
}

/** A key of the right shape that no application holds. */
const randomKey = (): string => `key_pvt_${randomBytes(32).toString('hex').slice(0, 43)}`;

const LIMIT = 5;

/** A request with `key`, from the test's address (127.0.0.1), forwarding `forwardedFor` when given. */
const call = (t: TestApp, key: string, forwardedFor?: string) => {
  const req = request(t.http).get('/applications/key').set('BT-API-KEY', key);
  return forwardedFor === undefined ? req : req.set('X-Forwarded-For', forwardedFor);
};

/** `count` failed authentications from `forwardedFor`'s client; their statuses. */
async function failures(t: TestApp, count: number, forwardedFor?: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await call(t, randomKey(), forwardedFor)).status);
  return statuses;
}

async function validKey(t: TestApp): Promise<string> {
  const tenant = await newTenant(t, 'client addresses');
  return (await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:read'] }))
    .key;
}

/**
 * Abuse class: failed authentications counted per balancer (issue 42). Behind HAProxy every request comes
 * from the balancer's address, so one client's junk keys made every tenant's valid key a 429. The failures
 * are counted per real client (TRUST_PROXY names the balancers whose X-Forwarded-For is believed), and a
 * valid key is looked up before the failures of its address are: it is never refused for them.
 */
describe('abuse: failed authentications per client, TRUST_PROXY unset', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({ AUTH_FAILURES_PER_MINUTE: String(LIMIT), RATE_LIMIT_PER_MINUTE: '100000' });
  });
  afterAll(() => t.close());

  it('ignores X-Forwarded-For: every forwarded client counts as the peer; a valid key is still served past the limit', async () => {
    const key = await validKey(t);
    awayFromMinuteEdge(t);
    const first = await failures(t, LIMIT, '203.0.113.1');
    const other = await call(t, randomKey(), '203.0.113.2');
    const valid = await call(t, key, '203.0.113.1');
    const plain = await call(t, key);
    const again = await call(t, randomKey());
    process.stdout.write(
      `TRUST_PROXY unset, limit ${LIMIT}: ${first.join(',')} then another forwarded client ${other.status}; ` +
        `a valid key ${valid.status}, ${plain.status}; a bad key again ${again.status}\n`,
    );
    expect(first).toEqual(Array(LIMIT).fill(401));
    expectProblem(other, 429);
    expect(valid.status).toBe(200);
    expect(plain.status).toBe(200);
    expectProblem(again, 429);
  });
});

describe('abuse: failed authentications per client, TRUST_PROXY=127.0.0.1', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({
      AUTH_FAILURES_PER_MINUTE: String(LIMIT),
      RATE_LIMIT_PER_MINUTE: '100000',
      TRUST_PROXY: '127.0.0.1',
    });
  });
  afterAll(() => t.close());

  it('counts two clients behind the trusted proxy apart; a spoofed leftmost entry counts for the rightmost untrusted one; a valid key is served past the limit', async () => {
    const key = await validKey(t);
    awayFromMinuteEdge(t);
    const a = await failures(t, LIMIT, '198.51.100.1');
    const aOver = await call(t, randomKey(), '198.51.100.1');
    const b = await failures(t, LIMIT - 1, '198.51.100.2');
    // 198.51.100.1 claims to forward for 198.51.100.2 (which has one failure left): still counted as 198.51.100.1.
    const spoofed = await call(t, randomKey(), '198.51.100.2, 198.51.100.1');
    // Through two balancers: the rightmost address that is not a trusted proxy is the client.
    const chained = await call(t, randomKey(), '198.51.100.2, 127.0.0.1');
    const bOver = await call(t, randomKey(), '198.51.100.2');
    const validA = await call(t, key, '198.51.100.1');
    const validB = await call(t, key, '198.51.100.2');
    const c = await call(t, randomKey(), '198.51.100.3');
    process.stdout.write(
      `TRUST_PROXY=127.0.0.1, limit ${LIMIT}: client A ${a.join(',')} then ${aOver.status}; client B ${b.join(',')}; ` +
        `A spoofing B leftmost ${spoofed.status}; B through two proxies ${chained.status} then ${bOver.status}; ` +
        `valid key from A ${validA.status}, from B ${validB.status}; client C ${c.status}\n`,
    );
    expect(a).toEqual(Array(LIMIT).fill(401));
    expectProblem(aOver, 429);
    expect(Number(aOver.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(b).toEqual(Array(LIMIT - 1).fill(401));
    expectProblem(spoofed, 429);
    expect(chained.status).toBe(401);
    expectProblem(bOver, 429);
    expect(validA.status).toBe(200);
    expect(validB.status).toBe(200);
    expect(c.status).toBe(401);
  });
});

describe('abuse: failed authentications per client, a peer that is not a trusted proxy', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({
      AUTH_FAILURES_PER_MINUTE: String(LIMIT),
      RATE_LIMIT_PER_MINUTE: '100000',
      TRUST_PROXY: '10.0.0.0/8',
    });
  });
  afterAll(() => t.close());

  it('ignores the X-Forwarded-For of an untrusted peer: a new spoofed address per request is still one client', async () => {
    awayFromMinuteEdge(t);
    const statuses: number[] = [];
    for (let i = 1; i <= LIMIT + 1; i++) statuses.push((await call(t, randomKey(), `192.0.2.${i}`)).status);
    process.stdout.write(`TRUST_PROXY=10.0.0.0/8, peer 127.0.0.1 spoofing XFF: ${statuses.join(',')}\n`);
    expect(statuses).toEqual([...Array(LIMIT).fill(401), 429]);
  });
});
