import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { TenantsService } from '../src/modules/tenants/tenants.service';
import { newApplication, startApp, TestApp } from './support/app';
import { spawnJs } from './support/processes';
import { createDatabase, dropDatabase } from './support/test-database';
import { waitFor } from './support/wait';

const TENANTS = 200;
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/**
 * `vault keys rotate` in batches, each committed: killed with SIGKILL after its first batch, it leaves
 * every tenant key under one version or the other (none lost, none half-written), `keys status` shows how
 * far it got, and running it again finishes the rest; the old key can then go.
 */
describe('keys rotate, killed and run again', () => {
  let db: { name: string; url: string };
  const v1 = `v1:${randomBytes(32).toString('base64')}`;
  const v2 = `v2:${randomBytes(32).toString('base64')}`;
  const apps: TestApp[] = [];
  const keys: { key: string; token: string }[] = [];
  const cli = (args: string[], encryptionKeys: string) =>
    spawnJs('bin/vault.js', args, {
      LOG_LEVEL: 'warn',
      DATABASE_URL: db.url,
      KEY_PROVIDER: 'env',
      ENCRYPTION_KEYS: encryptionKeys,
    });
  const versions = async () => {
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      const { rows } = await pg.query<{ key_version: string; n: number }>(
        `SELECT key_version, count(*)::int AS n FROM tenants WHERE wrapped_key IS NOT NULL
          GROUP BY key_version ORDER BY key_version`,
      );
      return Object.fromEntries(rows.map((r) => [r.key_version, r.n]));
    } finally {
      await pg.end();
    }
  };

  beforeAll(async () => {
    db = await createDatabase('vault_test_rotation');
    const t = await startApp({ DATABASE_URL: db.url, ENCRYPTION_KEYS: v1, JOBS_ENABLED: 'false' });
    apps.push(t);
    const tenants = t.app.get(TenantsService);
    for (let i = 0; i < TENANTS; i++) {
      const created = await tenants.createTenant(`tenant ${i}`);
      // A token in a few of them, spread over the order the batches take them in.
      if (i % 40 === 0) {
        const key = (
          await newApplication(t, created.management_key, {
            type: 'private',
            permissions: ['token:create', 'token:read'],
          })
        ).key;
        const made = await request(t.http)
          .post('/tokens')
          .set('BT-API-KEY', key)
          .send({ type: 'card', data: CARD });
        keys.push({ key, token: made.body.id });
      }
    }
    await t.close();
    apps.pop();
  }, 180_000);

  afterAll(async () => {
    for (const t of apps) await t.close();
    await dropDatabase(db.name);
  });

  it('SIGKILL after the first batch: every key under v1 or v2, none lost; status shows how far; a second run finishes; v2 alone then reads', async () => {
    const first = cli(['keys', 'rotate', '--batch', '1'], `${v1},${v2}`);
    await waitFor(() => first.stderr().includes('re-wrapped: '), { timeoutMs: 60_000, intervalMs: 5 });
    first.child.kill('SIGKILL');
    await first.exited;

    const after = await versions();
    expect((after.v1 ?? 0) + (after.v2 ?? 0)).toBe(TENANTS);
    expect(after.v2).toBeGreaterThanOrEqual(1);
    expect(after.v1).toBeGreaterThanOrEqual(1);
    const status = cli(['keys', 'status'], `${v1},${v2}`);
    await status.exited;
    expect(JSON.parse(status.stdout()).rotation).toEqual({ done: after.v2, total: TENANTS });

    // Reads never fail meanwhile: a server holding both versions serves every tenant.
    const both = await startApp({
      DATABASE_URL: db.url,
      ENCRYPTION_KEYS: `${v1},${v2}`,
      JOBS_ENABLED: 'false',
    });
    apps.push(both);
    for (const { key } of keys)
      await request(both.http)
        .post('/tokens')
        .set('BT-API-KEY', key)
        .send({ type: 'card', data: CARD })
        .expect(201);
    await both.close();
    apps.pop();

    const second = cli(['keys', 'rotate'], `${v1},${v2}`);
    expect(await second.exited).toBe(0);
    expect(JSON.parse(second.stdout())).toEqual({ active_version: 'v2', rewrapped_tenants: after.v1 });
    expect(second.stderr()).toMatch(new RegExp(`re-wrapped: ${TENANTS} of ${TENANTS} tenant keys under v2`));
    expect(await versions()).toEqual({ v2: TENANTS });
    const done = cli(['keys', 'status'], v2);
    await done.exited;
    expect(JSON.parse(done.stdout()).rotation).toBeNull();

    const alone = await startApp({ DATABASE_URL: db.url, ENCRYPTION_KEYS: v2, JOBS_ENABLED: 'false' });
    apps.push(alone);
    for (const { key, token } of keys) {
      await request(alone.http).get(`/tokens/${token}`).set('BT-API-KEY', key).expect(200);
      await request(alone.http)
        .post('/tokens')
        .set('BT-API-KEY', key)
        .send({ type: 'card', data: CARD })
        .expect(201);
    }
  }, 180_000);
});
