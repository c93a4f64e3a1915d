import request from 'supertest';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/jobs/clock';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from '../support/app';
import { authorizedSession } from '../support/attacker';

/** Fixed one-minute windows: start a test well inside one so that no window ends mid-test. */
function awayFromMinuteEdge(t: TestApp, needMs = 30_000): void {
  const clock = t.app.get(Clock);
  const left = 60_000 - (clock.now().getTime() % 60_000);
  if (left < needMs) clock.advance(left + 100);
}

const PER_MINUTE = 60;

/**
 * Abuse class: public keys filling the vault (issue 42). A public key sits in a browser or an app, where
 * anyone can take it; with it, 100,000 tokens were created in 61 s. A tokenize by a public key or a session
 * (which counts for the public application that created it) creates at most 10 tokens, and each client
 * address makes at most PUBLIC_TOKENIZE_PER_MINUTE such requests per minute per public application.
 * Clients are told apart behind the test's "balancer" (TRUST_PROXY=127.0.0.1) by X-Forwarded-For.
 */
describe('abuse: public keys and sessions cannot fill the vault', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let pub: string;
  let otherPub: string;
  let pvt: string;

  beforeAll(async () => {
    t = await startApp({
      RATE_LIMIT_PER_MINUTE: '100000',
      PUBLIC_TOKENIZE_PER_MINUTE: String(PER_MINUTE),
      TRUST_PROXY: '127.0.0.1',
    });
    db = t.app.get(DataSource);
    tenant = await newTenant(t, 'public tokenize');
    pub = (await newApplication(t, tenant.managementKey, { type: 'public', permissions: ['token:create'] }))
      .key;
    otherPub = (
      await newApplication(t, tenant.managementKey, { type: 'public', permissions: ['token:create'] })
    ).key;
    pvt = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
    ).key;
  });
  afterAll(() => t.close());

  const tokens = async (): Promise<number> =>
    Number(
      (
        await db.query<{ n: string }[]>('SELECT count(*) AS n FROM tokens WHERE tenant_id = $1', [
          tenant.tenantId,
        ])
      )[0].n,
    );
  const tokenize = (key: string, client: string, body: unknown, path = '/tokenize') =>
    request(t.http)
      .post(path)
      .set('BT-API-KEY', key)
      .set('X-Forwarded-For', client)
      .send(body as object);

  it('a public key or a session creates at most 10 tokens per request: 11 is a 400 naming the 11th field, nothing written', async () => {
    const session = await authorizedSession(t, pub, pvt, { permissions: ['token:create'] });
    const eleven = Array.from({ length: 11 }, (_, i) => `secret value ${i}`);
    const byKey = Object.fromEntries(eleven.map((value, i) => [`field${i}`, value]));
    const before = await tokens();
    const array = await tokenize(pub, '198.51.100.10', eleven);
    const object = await tokenize(session, '198.51.100.10', byKey);
    const written = (await tokens()) - before;
    const ten = await tokenize(pub, '198.51.100.10', eleven.slice(0, 10));
    const privateEleven = await tokenize(pvt, '198.51.100.10', eleven);
    process.stdout.write(
      `11 tokens in one request: public key ${array.status} (${Object.keys(array.body.errors ?? {}).join(',')}), session ` +
        `${object.status} (${Object.keys(object.body.errors ?? {}).join(',')}), ${written} written; 10 tokens ${ten.status}; ` +
        `a private key's 11 ${privateEleven.status}\n`,
    );
    expectProblem(array, 400);
    expect(array.body).toMatchObject({ code: 'too_many_tokens', errors: { '[10]': [expect.any(String)] } });
    expectProblem(object, 400);
    expect(object.body).toMatchObject({ code: 'too_many_tokens', errors: { field10: [expect.any(String)] } });
    expect(array.text + object.text).not.toContain('secret value');
    expect(written).toBe(0);
    expect(ten.status).toBe(201);
    expect(privateEleven.status).toBe(201);
  });

  it(`the ${PER_MINUTE + 1}st tokenize of one address and public application in a minute is a 429 with Retry-After, nothing written; another address, another application and a private key go on`, async () => {
    awayFromMinuteEdge(t);
    const statuses: number[] = [];
    // Half through POST /tokenize, half through POST /tokens: one count for both.
    for (let i = 0; i < PER_MINUTE; i++)
      statuses.push(
        (i % 2
          ? await tokenize(pub, '198.51.100.1', { type: 'token', data: `v${i}` }, '/tokens')
          : await tokenize(pub, '198.51.100.1', [`v${i}`])
        ).status,
      );
    const before = await tokens();
    const over = await tokenize(pub, '198.51.100.1', ['over']);
    const overOne = await tokenize(pub, '198.51.100.1', { type: 'token', data: 'over' }, '/tokens');
    const written = (await tokens()) - before;
    // The balancer forwarding for a client that claims another address first: still 198.51.100.1.
    const spoofed = await tokenize(pub, '203.0.113.9, 198.51.100.1', ['spoofed']);
    const otherAddress = await tokenize(pub, '198.51.100.2', ['other address']);
    const otherApplication = await tokenize(otherPub, '198.51.100.1', ['other application']);
    const privateKey: number[] = [];
    for (let i = 0; i < 5; i++)
      privateKey.push((await tokenize(pvt, '198.51.100.1', [`private ${i}`])).status);
    process.stdout.write(
      `${PER_MINUTE} public tokenizes from one address: ${statuses.filter((s) => s === 201).length} created; then ` +
        `${over.status}/${overOne.status} (Retry-After ${over.headers['retry-after']}), ${written} written; spoofed ` +
        `leftmost ${spoofed.status}; another address ${otherAddress.status}; another application ` +
        `${otherApplication.status}; a private key ${privateKey.join(',')}\n`,
    );
    expect(statuses).toEqual(Array(PER_MINUTE).fill(201));
    expectProblem(over, 429);
    expect(over.body.code).toBe('rate_limited');
    const retryAfter = Number(over.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expectProblem(overOne, 429);
    expect(written).toBe(0);
    expectProblem(spoofed, 429);
    expect(otherAddress.status).toBe(201);
    expect(otherApplication.status).toBe(201);
    expect(privateKey).toEqual(Array(5).fill(201));
  });

  it('a session counts against the public application that created it', async () => {
    const session = await authorizedSession(t, otherPub, pvt, { permissions: ['token:create'] });
    awayFromMinuteEdge(t);
    const statuses: number[] = [];
    for (let i = 0; i < PER_MINUTE / 2; i++)
      statuses.push((await tokenize(otherPub, '198.51.100.3', [`key ${i}`])).status);
    for (let i = 0; i < PER_MINUTE / 2; i++)
      statuses.push((await tokenize(session, '198.51.100.3', [`session ${i}`])).status);
    const before = await tokens();
    const bySession = await tokenize(session, '198.51.100.3', ['over']);
    const byKey = await tokenize(otherPub, '198.51.100.3', ['over']);
    const written = (await tokens()) - before;
    const elsewhere = await tokenize(session, '198.51.100.4', ['elsewhere']);
    process.stdout.write(
      `${PER_MINUTE / 2} tokenizes by a public key and ${PER_MINUTE / 2} by its session from one address: ` +
        `${statuses.filter((s) => s === 201).length} created; then session ${bySession.status}, key ${byKey.status}, ` +
        `${written} written; the session from another address ${elsewhere.status}\n`,
    );
    expect(statuses).toEqual(Array(PER_MINUTE).fill(201));
    expectProblem(bySession, 429);
    expect(Number(bySession.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expectProblem(byKey, 429);
    expect(written).toBe(0);
    expect(elsewhere.status).toBe(201);
  });
});

describe('abuse: public tokenizes are counted across instances', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    const env = {
      RATE_LIMIT_PER_MINUTE: '100000',
      PUBLIC_TOKENIZE_PER_MINUTE: '10',
      TRUST_PROXY: '127.0.0.1',
    };
    a = await startApp(env);
    b = await startApp(env);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('one address and public application through two instances on one database: 10 created, then 429s', async () => {
    const tenant = await newTenant(a, 'public tokenize, two instances');
    const pub = (
      await newApplication(a, tenant.managementKey, { type: 'public', permissions: ['token:create'] })
    ).key;
    const left = 60_000 - (a.app.get(Clock).now().getTime() % 60_000);
    if (left < 15_000) for (const t of [a, b]) t.app.get(Clock).advance(left + 100);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      for (const t of [a, b])
        statuses.push(
          (
            await request(t.http)
              .post('/tokenize')
              .set('BT-API-KEY', pub)
              .set('X-Forwarded-For', '198.51.100.7')
              .send([`v${i}`])
          ).status,
        );
    process.stdout.write(
      `14 public tokenizes through two instances at a limit of 10: ${statuses.join(',')}\n`,
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(4);
  });
});
