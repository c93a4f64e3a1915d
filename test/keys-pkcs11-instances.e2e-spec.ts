import { randomInt } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { TenantsService } from '../src/modules/tenants/tenants.service';
import { newApplication, startApp, TestApp } from './support/app';
import { freePort, spawnJs, type Spawned, stop, waitForReady } from './support/processes';
import { initToken, SOFTHSM_MODULE } from './support/softhsm';
import { createDatabase, dropDatabase } from './support/test-database';
import { waitFor } from './support/wait';

const PIN = '5512-0937';
const TENANTS = 24;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/**
 * KEY_PROVIDER=pkcs11 with two instances on one token (one in this process, one its own process), and
 * both rotations under it killed with SIGKILL at a random point and run again: every tenant key under one
 * KEK version or the other, every token under one generation or the other, each read at both instances.
 */
describe('pkcs11: two instances on one token, rotations killed at random points', () => {
  let db: { name: string; url: string };
  let env: Record<string, string>;
  let inProcess: TestApp;
  let other: { spawned: Spawned; url: string };
  const tokens: { key: string; id: string }[] = [];
  const cli = (args: string[]) =>
    spawnJs('bin/vault.js', args, { LOG_LEVEL: 'warn', DATABASE_URL: db.url, ...env });
  const startOther = async () => {
    const port = await freePort();
    const spawned = spawnJs('dist/main.js', [], {
      ...env,
      DATABASE_URL: db.url,
      PORT: String(port),
      LOG_LEVEL: 'warn',
    });
    await waitForReady(port);
    return { spawned, url: `http://127.0.0.1:${port}` };
  };
  const query = async <R>(sql: string) => {
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      return (await pg.query(sql)).rows as R[];
    } finally {
      await pg.end();
    }
  };
  /** Every token read at both instances (each unwraps its tenant's key through the token on its own). */
  const readEverywhere = async () => {
    for (const { key, id } of tokens) {
      await request(inProcess.http).get(`/tokens/${id}`).set('BT-API-KEY', key).expect(200);
      await request(other.url).get(`/tokens/${id}`).set('BT-API-KEY', key).expect(200);
    }
  };
  /** Killed with SIGKILL at a random time after its first progress line. */
  const killDuring = async (args: string[], progress: string) => {
    const run = cli(args);
    await waitFor(() => run.stderr().includes(progress), { timeoutMs: 60_000, intervalMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, randomInt(0, 150)));
    run.child.kill('SIGKILL');
    await run.exited;
  };

  beforeAll(async () => {
    initToken('vault-two', PIN);
    env = {
      KEY_PROVIDER: 'pkcs11',
      ENCRYPTION_KEYS: '',
      PKCS11_MODULE: SOFTHSM_MODULE,
      PKCS11_TOKEN_LABEL: 'vault-two',
      PKCS11_PIN: PIN,
      JOBS_ENABLED: 'false',
    };
    db = await createDatabase('vault_test_pkcs11_two');
    const made = cli(['keys', 'ceremony', '--provider', 'pkcs11']);
    expect(await made.exited).toBe(0);
    inProcess = await startApp({ DATABASE_URL: db.url, ...env });
    other = await startOther();
    for (let i = 0; i < TENANTS; i++) {
      const tenant = await inProcess.app.get(TenantsService).createTenant(`tenant ${i}`);
      const { key } = await newApplication(inProcess, tenant.management_key, {
        type: 'private',
        permissions: ['token:create', 'token:read'],
      });
      // Written at either instance, alternately.
      const at = i % 2 ? other.url : inProcess.http;
      for (let n = 0; n < 5; n++) {
        const made = await request(at)
          .post('/tokens')
          .set('BT-API-KEY', key)
          .send({ type: 'card', data: CARD });
        expect(made.status).toBe(201);
        tokens.push({ key, id: made.body.id });
      }
    }
  }, 180_000);

  afterAll(async () => {
    await inProcess?.close();
    if (other) await stop(other.spawned);
    await dropDatabase(db.name);
  });

  it('both instances write and read every tenant through the one token', async () => {
    await readEverywhere();
  }, 120_000);

  it('a new KEK in the token, a rolling restart, `vault keys rotate` killed then run again', async () => {
    expect(await cli(['keys', 'ceremony', '--provider', 'pkcs11']).exited).toBe(0);
    // Rolling: one instance restarted while the other serves, then the other.
    await inProcess.close();
    inProcess = await startApp({ DATABASE_URL: db.url, ...env });
    await readEverywhere();
    await stop(other.spawned);
    other = await startOther();

    const [{ n: total }] = await query<{ n: number }>(
      `SELECT count(*)::int AS n FROM tenants WHERE wrapped_key IS NOT NULL`,
    );
    await killDuring(['keys', 'rotate', '--batch', '1'], 're-wrapped: ');
    const split = await query<{ key_version: string; n: number }>(
      `SELECT key_version, count(*)::int AS n FROM tenants WHERE wrapped_key IS NOT NULL GROUP BY key_version`,
    );
    expect(split.reduce((n, row) => n + row.n, 0)).toBe(total);
    expect(split.map((row) => row.key_version).every((v) => v === 'v1' || v === 'v2')).toBe(true);
    await readEverywhere();

    const again = cli(['keys', 'rotate']);
    expect(await again.exited).toBe(0);
    expect(await query(`SELECT DISTINCT key_version FROM tenants WHERE wrapped_key IS NOT NULL`)).toEqual([
      { key_version: 'v2' },
    ]);
    await readEverywhere();
  }, 180_000);

  it('`vault keys rotate --tenant-keys` killed then run again: every token under the last generation, read at both', async () => {
    await killDuring(['keys', 'rotate', '--tenant-keys', '--batch', '1'], 'sealed again: ');
    await readEverywhere();
    const last = cli(['keys', 'rotate', '--tenant-keys', '--batch', '10']);
    expect(await last.exited).toBe(0);
    // The killed run may have finished before its kill: then this one made the next generation.
    const [{ last: generation }] = await query<{ last: number }>(
      `SELECT max(generation) AS last FROM tenant_data_keys`,
    );
    expect(await query(`SELECT DISTINCT data_key FROM tokens`)).toEqual([{ data_key: generation }]);
    expect(await query<{ n: number }>(`SELECT count(*)::int AS n FROM tokens`)).toEqual([{ n: TENANTS * 5 }]);
    await readEverywhere();
    const status = cli(['keys', 'status']);
    expect(await status.exited).toBe(0);
    expect(JSON.parse(status.stdout())).toMatchObject({ rotation: null, data_keys: { rotation: null } });
  }, 180_000);
});
