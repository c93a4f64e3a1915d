import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { Client } from 'pg';
import { ADMIN_URL, createDatabase, dropDatabase } from '../support/test-database';
import { freePort, stop } from '../support/processes';
import { allOrNone, api, privateKey, Server, startServer, tokenizeLoad } from './support';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function ready(server: Server): Promise<number> {
  try {
    return (await fetch(`${server.base}/health/ready`)).status;
  } catch {
    return 0;
  }
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await pause(200);
  }
  return false;
}

function pgctl(action: 'stop' | 'start'): void {
  const version = readdirSync('/etc/postgresql')[0];
  execFileSync(
    'pg_ctlcluster',
    ['--skip-systemctl-redirect', version, 'main', action, ...(action === 'stop' ? ['-m', 'fast'] : [])],
    {
      stdio: 'pipe',
    },
  );
}

/** Faults between the service and PostgreSQL: connections killed, then the server itself restarted. */
describe('database faults under load', () => {
  let db: { name: string; url: string };
  let server: Server;
  let key: string;

  beforeAll(async () => {
    db = await createDatabase('vault_test_dbfaults');
    server = await startServer(await freePort(), db.url);
    key = await privateKey(server);
  });
  afterAll(async () => {
    if (server) await stop(server.spawned);
    if (db) await dropDatabase(db.name);
  });

  it('pg_terminate_backend of every service connection: errors meanwhile, recovery without a restart, no half-written rows', async () => {
    const load = tokenizeLoad(() => server.base, key);
    await pause(500);
    const admin = new Client({ connectionString: ADMIN_URL });
    await admin.connect();
    let terminated = 0;
    try {
      for (let i = 0; i < 10; i++) {
        const { rows } = await admin.query<{ n: number }>(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
          [db.name],
        );
        terminated += rows[0].n;
        await pause(150);
      }
    } finally {
      await admin.end();
    }
    await pause(500);
    await load.stop();
    const failures = load.statuses.filter((s) => s >= 500 || s === 0).length;
    const recovered = await waitUntil(async () => (await ready(server)) === 200, 10_000);
    if (!recovered)
      process.stdout.write(
        `SERVER STDERR:\n${server.spawned.stderr().slice(-4000)}\nSTDOUT:\n${server.spawned.stdout().slice(-3000)}\n`,
      );
    expect(recovered).toBe(true);
    expect((await api(server.base, key, 'POST', '/tokenize', { type: 'token', data: 'after' })).status).toBe(
      201,
    );
    const { complete, partial } = await allOrNone(db.url);
    process.stdout.write(
      `pg_terminate_backend: ${terminated} connections killed over 1.5 s; ${load.statuses.length} requests, ` +
        `${load.acknowledged.size} acknowledged, ${failures} failed (5xx or cut); ${complete} complete, ${partial.length} partial\n`,
    );
    expect(terminated).toBeGreaterThan(0);
    expect(load.statuses.every((s) => s === 201 || s >= 500 || s === 0)).toBe(true);
    expect(partial).toEqual([]);
    expect(complete).toBeGreaterThanOrEqual(load.acknowledged.size);
  });

  it('PostgreSQL stopped and started again: 503 and readiness down meanwhile, recovery without a restart', async () => {
    if (!existsSync('/etc/postgresql'))
      throw new Error('needs a local PostgreSQL cluster managed by pg_ctlcluster');
    const load = tokenizeLoad(() => server.base, key, 4);
    await pause(500);
    pgctl('stop');
    const { readiness, during } = await (async () => {
      try {
        await pause(1_000);
        return {
          readiness: await ready(server),
          during: await api(server.base, key, 'POST', '/tokenize', { type: 'token', data: 'during' }),
        };
      } finally {
        pgctl('start');
      }
    })();
    expect(await waitUntil(async () => (await ready(server)) === 200, 30_000)).toBe(true);
    await pause(500);
    await load.stop();
    const after = await api(server.base, key, 'POST', '/tokenize', { type: 'token', data: 'after restart' });
    const { complete, partial } = await allOrNone(db.url);
    process.stdout.write(
      `postgres restart: readiness ${readiness} while down, tokenize ${during.status} (${String(during.body?.code)}); ` +
        `${load.statuses.length} requests, ${load.acknowledged.size} acknowledged; after: ${after.status}; ` +
        `${complete} complete, ${partial.length} partial\n`,
    );
    expect(readiness).toBe(503);
    expect(during.status).toBe(503);
    expect(during.body).toMatchObject({ status: 503, code: 'database_unavailable' });
    expect(after.status).toBe(201);
    expect(partial).toEqual([]);
    expect(complete).toBeGreaterThanOrEqual(load.acknowledged.size);
  });
});
