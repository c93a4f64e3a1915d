import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { waitFor } from './support/wait';
import { DataSource } from 'typeorm';
import { BootstrapService } from '../src/modules/tenants/bootstrap.service';
import { TokensService } from '../src/modules/tokens/tokens.service';
import { RetentionJob } from '../src/common/jobs/retention.job';
import { newApplication, privatePrincipal, startApp, TestApp } from './support/app';
import {
  newConnection,
  ORCHESTRATION_PERMISSIONS,
  waitForConnection,
  waitForTransaction,
} from './support/orchestration';

// Creating the embedded database and running every migration on it (the first boot, and the restart's)
// takes about 10 s on a quiet machine and over a minute on a loaded one.
jest.setTimeout(300_000);

/** The embedded default: PGlite under DATA_DIR, reached through pg over a private socket. */
describe('embedded PGlite database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-pglite-test-'));
  // No ENCRYPTION_KEYS: the embedded default generates its master key file into DATA_DIR.
  const embedded = { DATABASE_URL: '', DATA_DIR: dataDir, BOOTSTRAP: 'true', ENCRYPTION_KEYS: '' };
  let printed = '';
  let t: TestApp;

  async function boot(): Promise<TestApp> {
    printed = '';
    const write = process.stdout.write.bind(process.stdout) as (...args: unknown[]) => boolean;
    const spy = jest
      .spyOn(process.stdout, 'write')
      .mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => {
        printed += chunk.toString();
        return write(chunk, ...rest);
      });
    try {
      const app = await startApp(embedded);
      // The server prints it after it listens (main.ts); the test app does not listen.
      app.app.get(BootstrapService).printBanner();
      return app;
    } finally {
      spy.mockRestore();
    }
  }

  beforeAll(async () => {
    t = await boot();
  });
  afterAll(async () => {
    // Undefined when the boot itself failed: that failure is the one to read.
    await t?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  let managementKey: string;
  let privateKey: string;

  it('bootstraps a default tenant on first start and prints its management key', async () => {
    const match = /^\s+(key_mgt_[0-9A-Za-z]+)$/m.exec(printed);
    expect(match).not.toBeNull();
    managementKey = match![1];
    await request(t.http).get('/health/ready').expect(200);
    const tenant = await request(t.http).get('/tenants/self').set('BT-API-KEY', managementKey).expect(200);
    expect(tenant.body.name).toBe('default');
  });

  it('creates a private application whose key passes GET /applications/key', async () => {
    const app = await newApplication(t, managementKey, { type: 'private', permissions: ['token:read'] });
    privateKey = app.key;
    await request(t.http).get('/applications/key').set('BT-API-KEY', privateKey).expect(200);
  });

  it('serves concurrent requests without interleaving transactions', async () => {
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        i % 2
          ? request(t.http)
              .post('/applications')
              .set('BT-API-KEY', managementKey)
              .send({ name: `c${i}`, type: 'public' })
          : request(t.http).get('/applications?size=5').set('BT-API-KEY', managementKey),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual(
      [...Array(12).fill(201), ...Array(13).fill(200)].sort(),
    );
  });

  it('keeps a transaction whole: another transaction never sees its uncommitted rows', async () => {
    const dataSource = t.app.get(DataSource);
    const events: string[] = [];
    const first = dataSource
      .transaction(async (em) => {
        await em.query(`INSERT INTO tenants (id, name) VALUES (gen_random_uuid(), 'uncommitted')`);
        events.push('first inserted');
        // Yield to the event loop (pg_sleep would block PGlite's thread and prove nothing).
        await new Promise((r) => setTimeout(r, 200));
        await em.query('SELECT 1');
        throw new Error('roll back');
      })
      .catch(() => events.push('first rolled back'));
    await waitFor(() => events.includes('first inserted'), { what: 'the first transaction to insert' });
    const seen = await dataSource.transaction(async (em) => {
      events.push('second started');
      const rows: { n: number }[] = await em.query(
        `SELECT count(*)::int AS n FROM tenants WHERE name = 'uncommitted'`,
      );
      return rows[0].n;
    });
    await first;
    expect(seen).toBe(0);
    expect(events).toEqual(['first inserted', 'first rolled back', 'second started']);
  });

  let cardTokenId: string;
  let cardKey: string;
  it('tokenizes a card with the generated master key', async () => {
    expect(existsSync(join(dataDir, 'master-keys'))).toBe(true);
    const app = await newApplication(t, managementKey, {
      type: 'private',
      permissions: ['token:create', 'token:use'],
    });
    cardKey = app.key;
    const res = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', cardKey)
      .send({
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 1, expiration_year: 2031 },
      })
      .expect(201);
    cardTokenId = res.body.id;
  });

  it('sessions, audit logs and idempotent retries work on the embedded database', async () => {
    const pub = await newApplication(t, managementKey, { type: 'public', permissions: ['token:create'] });
    const session = (await request(t.http).post('/sessions').set('BT-API-KEY', pub.key).expect(201)).body;
    await request(t.http)
      .post('/sessions/authorize')
      .set('BT-API-KEY', cardKey)
      .send({ nonce: session.nonce, permissions: ['token:create'] })
      .expect(204);
    const send = () =>
      request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', session.session_key)
        .set('BT-IDEMPOTENCY-KEY', 'embedded-retry')
        .send({ type: 'token', data: 'embedded' });
    const responses = await Promise.all([send(), send(), send(), send()]);
    const processed = responses.filter((r) => r.status === 201 && !r.headers['bt-idempotency-replayed']);
    expect(processed).toHaveLength(1);
    expect(responses.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    const replay = await send().expect(201);
    expect(replay.text).toBe(processed[0].text);
    const logs = await request(t.http)
      .get('/logs')
      .query({ entity_id: processed[0].body.id })
      .set('BT-API-KEY', managementKey)
      .expect(200);
    expect(logs.body.data).toHaveLength(1);
    expect(logs.body.data[0]).toMatchObject({ operation: 'create', actor_id: pub.id });
  });

  it('counts card numbers for the enumeration guard on the embedded database (digests, group versions, prune)', async () => {
    const reader = await newApplication(t, managementKey, {
      type: 'private',
      permissions: ['token:create', 'token:read'],
    });
    // Eleven Luhn-valid numbers sharing their first 6 and last 4 digits.
    const numbers: string[] = [];
    for (let middle = 0; numbers.length < 11; middle++) {
      const number = `411111${String(middle).padStart(6, '0')}1111`;
      let sum = 0;
      for (let i = 0; i < 16; i++) {
        let d = Number(number[15 - i]);
        if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
        sum += d;
      }
      if (sum % 10 === 0) numbers.push(number);
    }
    const card = (number: string) => ({
      type: 'card',
      data: { number, expiration_month: 1, expiration_year: 2031 },
    });
    const ten = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', reader.key)
      .send(numbers.slice(0, 10).map(card))
      .expect(201);
    expect(ten.body[0].fingerprint).toEqual(expect.any(String));
    const eleventh = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', reader.key)
      .send(card(numbers[10]));
    expect(eleventh.status).toBe(429);
    expect(eleventh.body.code).toBe('card_enumeration_suspected');
    // The public key is not counted; the reader's first read counts: past the limit without the fingerprint.
    const pub = await newApplication(t, managementKey, { type: 'public', permissions: ['token:create'] });
    const other = `5555555555554444`;
    const made = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', pub.key)
      .send([card(numbers[10]), card(other)])
      .expect(201);
    const read = (id: string) =>
      request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', reader.key).expect(200);
    expect((await read(made.body[0].id)).body).not.toHaveProperty('fingerprint');
    const shown = (await read(made.body[1].id)).body.fingerprint;
    expect(shown).toEqual(expect.any(String));
    expect((await read(made.body[1].id)).body.fingerprint).toBe(shown);
    await expect(t.app.get(RetentionJob).runNow('card-enumeration-counts')).resolves.toBe(0);
  });

  it('pays through a connection on the embedded database', async () => {
    const app = await newApplication(t, managementKey, {
      type: 'private',
      permissions: ORCHESTRATION_PERMISSIONS,
    });
    const connection = await newConnection(t, app.key, { currencies: ['USD'], countries: ['US'] });
    expect(await waitForConnection(t, app.key, connection.id)).toBe('available');
    const token = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', app.key)
      .send({
        type: 'card',
        data: { number: '4000000000000259', expiration_month: 1, expiration_year: 2031 },
      })
      .expect(201);
    const tx = await request(t.http)
      .post('/orchestration/transactions')
      .set('BT-API-KEY', app.key)
      .set('BT-IDEMPOTENCY-KEY', 'embedded-payment')
      .send({ amount: 500, currency: 'USD', connection_id: connection.id, token: token.body.id })
      .expect(201);
    expect(tx.body.status).toBe('authorization_succeeded');
    const captured = await request(t.http)
      .post(`/orchestration/transactions/${tx.body.id}/capture`)
      .set('BT-API-KEY', app.key)
      .expect(200);
    expect(captured.body.status).toBe('capture_pending');
    const settled = await waitForTransaction(t, app.key, tx.body.id, (x) => x.status !== 'capture_pending');
    expect(settled.status).toBe('capture_succeeded');
  });

  it('keeps everything across a restart, without bootstrapping again', async () => {
    await t.close();
    t = await boot();
    expect(printed).not.toMatch(/key_mgt_/);
    await request(t.http).get('/tenants/self').set('BT-API-KEY', managementKey).expect(200);
    await request(t.http).get('/applications/key').set('BT-API-KEY', privateKey).expect(200);
    const list = await request(t.http).get('/applications').set('BT-API-KEY', managementKey).expect(200);
    expect(list.body.pagination.total_items).toBe(5 + 14);
    const principal = (await request(t.http).get('/applications/key').set('BT-API-KEY', cardKey).expect(200))
      .body;
    const token = await t.app
      .get(TokensService)
      .loadForUse(privatePrincipal(principal.tenant_id, principal.permissions), cardTokenId);
    expect(token?.data).toMatchObject({ number: '4242424242424242' });
  });
});
