import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { LOCK_FILE_NAME } from '../src/database/embedded-lock';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { luhnCard } from './support/attacker';
import { freePort, Spawned, spawnJs, stop, waitForReady } from './support/processes';
import { createDatabase, dropDatabase } from './support/test-database';
import { ignoreTimeout, waitFor } from './support/wait';

/**
 * What a new user meets in the first hour: a start-up that fails says what to change in one line, a
 * stopping server finishes its requests, `keys rotate` cannot break a running server, a body sent
 * without its Content-Type is told so, and `/` leads to the documentation. The process tests run the
 * built server (dist/main.js, `npm run build` first).
 */
const key = (): string => `v1:${randomBytes(32).toString('base64')}`;
const KEY_LINE = /^\s+(key_mgt_[0-9A-Za-z]+)$/m;

/** Everything a process printed, as lines. */
const lines = (spawned: Spawned): string[] =>
  `${spawned.stdout()}${spawned.stderr()}`.split('\n').filter((line) => line.trim() !== '');

/** Runs dist/main.js with `env` until it exits; what it printed. */
async function failedStart(env: Record<string, string>): Promise<{ code: number | null; output: string[] }> {
  const port = await freePort();
  const server = spawnJs('dist/main.js', [], {
    PORT: String(port),
    BOOTSTRAP: 'false',
    LOG_LEVEL: 'info',
    ...env,
  });
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 60_000);
  const code = await server.exited;
  clearTimeout(timer);
  return { code, output: lines(server) };
}

describe('start-up failures: one line naming the variable', () => {
  let db: { name: string; url: string };
  beforeAll(async () => {
    db = await createDatabase('vault_test_first_hour');
  });
  afterAll(() => dropDatabase(db.name));

  /** The tables of the test database: none after a refusal (no migration ran). */
  const tables = async (): Promise<string[]> => {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ tablename: string }>(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
      );
      return rows.map((r) => r.tablename);
    } finally {
      await client.end();
    }
  };

  it('ENCRYPTION_KEYS missing with DATABASE_URL set: one line, before the database is touched', async () => {
    const { code, output } = await failedStart({ DATABASE_URL: db.url, ENCRYPTION_KEYS: '' });
    expect(code).not.toBe(0);
    expect(output).toEqual([expect.stringMatching(/^ENCRYPTION_KEYS: required when DATABASE_URL is set/)]);
    // It used to run the 33 migrations first.
    expect(await tables()).toEqual([]);
  }, 90_000);

  it('the CLI without ENCRYPTION_KEYS on DATABASE_URL: one line on stderr, no stack trace, nothing migrated', async () => {
    const run = spawnJs('dist/cli.js', ['tenant', 'create', '--name', 'acme'], {
      DATABASE_URL: db.url,
      ENCRYPTION_KEYS: '',
      LOG_LEVEL: 'warn',
    });
    const code = await run.exited;
    expect(code).toBe(1);
    expect(run.stdout()).toBe('');
    expect(run.stderr()).not.toMatch(/^\s+at /m);
    expect(run.stderr().trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^ENCRYPTION_KEYS: required when DATABASE_URL is set/),
    ]);
    expect(await tables()).toEqual([]);
  }, 90_000);

  it('the CLI with an unreachable database server: the line naming DATABASE_URL, no stack trace, no password', async () => {
    const run = spawnJs('dist/cli.js', ['tenant', 'create', '--name', 'acme'], {
      DATABASE_URL: 'postgres://vault:s3cret-pw@127.0.0.1:1/vault',
      ENCRYPTION_KEYS: key(),
      LOG_LEVEL: 'warn',
    });
    expect(await run.exited).toBe(1);
    expect(run.stdout()).toBe('');
    expect(run.stderr()).not.toMatch(/^\s+at /m);
    expect(run.stderr()).not.toContain('s3cret-pw');
    expect(run.stderr().trimEnd().split('\n')).toEqual([
      'Using PostgreSQL at 127.0.0.1:1/vault.',
      expect.stringMatching(
        /^Cannot reach PostgreSQL at 127\.0\.0\.1:1\/vault \(ECONNREFUSED\).*DATABASE_URL/,
      ),
    ]);
  }, 90_000);

  it('PORT=notaport is one line naming PORT and what it must be', async () => {
    const { code, output } = await failedStart({
      DATABASE_URL: db.url,
      ENCRYPTION_KEYS: key(),
      PORT: 'notaport',
    });
    expect(code).not.toBe(0);
    expect(output).toEqual(['Invalid configuration: PORT must be an integer from 0 to 65535.']);
    expect(await tables()).toEqual([]);
  }, 90_000);

  it('a database that does not exist names DATABASE_URL', async () => {
    const { code, output } = await failedStart({
      DATABASE_URL: db.url.replace(/\/[^/]+$/, '/vault_test_absent_db'),
      ENCRYPTION_KEYS: key(),
    });
    expect(code).not.toBe(0);
    expect(output.length).toBeLessThanOrEqual(2);
    expect(output.join('\n')).toContain('DATABASE_URL');
    expect(output.join('\n')).toContain('vault_test_absent_db');
  }, 90_000);

  it('an unreachable database server names DATABASE_URL, and never prints the password', async () => {
    const { code, output } = await failedStart({
      DATABASE_URL: 'postgres://vault:s3cret-pw@127.0.0.1:1/vault',
      ENCRYPTION_KEYS: key(),
    });
    expect(code).not.toBe(0);
    expect(output.length).toBeLessThanOrEqual(2);
    expect(output.join('\n')).toContain('DATABASE_URL');
    expect(output.join('\n')).not.toContain('s3cret-pw');
  }, 90_000);

  it('LOG_LEVEL=debug shows the details', async () => {
    const { code, output } = await failedStart({
      DATABASE_URL: db.url.replace(/\/[^/]+$/, '/vault_test_absent_db'),
      ENCRYPTION_KEYS: key(),
      LOG_LEVEL: 'debug',
    });
    expect(code).not.toBe(0);
    expect(output.join('\n')).toContain('DATABASE_URL');
    expect(output.join('\n')).toMatch(/^\s+at /m);
  }, 90_000);

  it('the port in use names PORT', async () => {
    const taken = createTcpServer();
    const port = await new Promise<number>((resolve) =>
      taken.listen(0, '127.0.0.1', () => resolve((taken.address() as { port: number }).port)),
    );
    try {
      const server = spawnJs('dist/main.js', [], {
        DATABASE_URL: db.url,
        ENCRYPTION_KEYS: key(),
        PORT: String(port),
        BOOTSTRAP: 'false',
        LOG_LEVEL: 'info',
      });
      const code = await server.exited;
      expect(code).not.toBe(0);
      expect(lines(server).length).toBeLessThanOrEqual(2);
      expect(lines(server).join('\n')).toContain('PORT');
    } finally {
      taken.close();
    }
  }, 90_000);

  it('a misspelled variable is named at start, with the one it resembles', async () => {
    const { code, output } = await failedStart({
      DATABASE_URL: db.url,
      ENCRYPTION_KEYS: '',
      DATABASE_ULR: 'postgres://127.0.0.1/other',
    });
    expect(code).not.toBe(0);
    expect(output.length).toBeLessThanOrEqual(2);
    expect(output.join('\n')).toMatch(/DATABASE_ULR .*DATABASE_URL/);
  }, 90_000);

  it('cli --help lists the subcommands', async () => {
    const help = spawnJs('dist/cli.js', ['--help'], {});
    expect(await help.exited).toBe(0);
    for (const command of ['tenant create', 'keys rotate', 'logs verify'])
      expect(help.stdout()).toContain(command);
  }, 30_000);

  it('the embedded database held by another process says so, with its path and what to do', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vault-first-hour-'));
    const holder = spawn('sleep', ['60']);
    try {
      writeFileSync(
        join(dataDir, LOCK_FILE_NAME),
        JSON.stringify({ pid: holder.pid, role: 'server', since: new Date().toISOString() }),
      );
      const { code, output } = await failedStart({
        DATABASE_URL: '',
        ENCRYPTION_KEYS: '',
        DATA_DIR: dataDir,
      });
      expect(code).not.toBe(0);
      expect(output.length).toBeLessThanOrEqual(2);
      expect(output.join('\n')).toContain(dataDir);
      expect(output.join('\n')).toContain('DATABASE_URL');
    } finally {
      holder.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});

/** A destination that answers 200 after `delayMs`; `arrived` counts the requests it has begun to answer. */
async function slowDestination(
  delayMs: number,
): Promise<{ server: Server; url: string; arrived: () => number }> {
  let arrived = 0;
  const server = createHttpServer((req, res) => {
    arrived++;
    req.resume();
    setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('slow answer'), delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/slow`,
    arrived: () => arrived,
  };
}

/** A spawned server on a fresh database, its management key (printed at bootstrap). */
async function runningServer(
  dbUrl: string,
  env: Record<string, string>,
): Promise<{ spawned: Spawned; base: string; managementKey?: string }> {
  const port = await freePort();
  const spawned = spawnJs('dist/main.js', [], {
    DATABASE_URL: dbUrl,
    PORT: String(port),
    BOOTSTRAP: 'true',
    LOG_LEVEL: 'warn',
    ...env,
  });
  await waitForReady(port, 90_000);
  // The banner comes right after "listening".
  await waitFor(() => KEY_LINE.test(spawned.stdout()), {
    timeoutMs: 5000,
    intervalMs: 50,
    what: 'the management key banner',
  }).catch(ignoreTimeout);
  return { spawned, base: `http://127.0.0.1:${port}`, managementKey: KEY_LINE.exec(spawned.stdout())?.[1] };
}

describe('stopping: SIGTERM lets the requests in flight finish', () => {
  it('a slow proxy request in flight completes 200, the process exits 0 and says one line per phase', async () => {
    const db = await createDatabase('vault_test_first_hour_stop');
    // Slower than the default drain delay (3 s), so that the request is still in flight when the drain begins.
    const destination = await slowDestination(4500);
    try {
      const { spawned, base, managementKey } = await runningServer(db.url, {
        ENCRYPTION_KEYS: key(),
        OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      });
      try {
        const app = await fetch(`${base}/applications`, {
          method: 'POST',
          headers: { 'BT-API-KEY': managementKey!, 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: 'proxy', type: 'private', permissions: ['token:use'] }),
        });
        expect(app.status).toBe(201);
        const { key: apiKey } = (await app.json()) as { key: string };
        const before = spawned.stdout().length;
        const started = Date.now();
        const inFlight = fetch(`${base}/proxy`, {
          method: 'POST',
          headers: { 'BT-API-KEY': apiKey, 'BT-PROXY-URL': destination.url, 'Content-Type': 'text/plain' },
          body: 'hello',
        });
        // In flight: the destination has the request (and answers 4.5 s later).
        await waitFor(() => destination.arrived() === 1, { what: 'the proxied request at the destination' });
        spawned.child.kill('SIGTERM');
        const res = await inFlight;
        expect(res.status).toBe(200);
        expect(await res.text()).toBe('slow answer');
        expect(Date.now() - started).toBeGreaterThanOrEqual(4500);
        expect(await spawned.exited).toBe(0);
        const after = spawned
          .stdout()
          .slice(before)
          .split('\n')
          .filter((l) => l.trim() !== '');
        // One line per phase (docs/operations.md). The jobs stop from the signal on, so their line may come
        // before the drain's; the requests finish after it.
        expect(after[0]).toBe('shutdown: SIGTERM: not ready, serving for 3000 ms more');
        expect(after.at(-1)).toMatch(/^shutdown: closed after \d+ ms$/);
        expect(after).toHaveLength(5);
        const draining = after.indexOf('shutdown: draining 1 request, no new connections (grace 25000 ms)');
        const finished = after.findIndex((l) => /^shutdown: requests finished after \d+ ms$/.test(l));
        expect(draining).toBeGreaterThan(0);
        expect(finished).toBeGreaterThan(draining);
        expect(after.filter((l) => l.startsWith('shutdown: jobs stopped'))).toHaveLength(1);
        // No new connections once stopping.
        await expect(fetch(`${base}/health/ready`)).rejects.toThrow();
      } finally {
        await stop(spawned);
      }
    } finally {
      destination.server.close();
      await dropDatabase(db.name);
    }
  }, 120_000);
});

describe('keys rotate cannot break a running server', () => {
  it('refuses, naming the server, while it lacks the new version; allowed once it was restarted with it', async () => {
    const db = await createDatabase('vault_test_first_hour_rotate');
    const v1 = key();
    const v2 = `v2:${randomBytes(32).toString('base64')}`;
    const cli = async (keys: string) => {
      const run = spawnJs('dist/cli.js', ['keys', 'rotate'], {
        DATABASE_URL: db.url,
        ENCRYPTION_KEYS: keys,
        LOG_LEVEL: 'warn',
      });
      return { code: await run.exited, stdout: run.stdout(), stderr: run.stderr() };
    };
    const wrapped = async () => {
      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        // Tenants with a key (the system tenant, whose log records rotations, has none).
        return (
          await client.query(
            'SELECT key_version FROM tenants WHERE wrapped_key IS NOT NULL ORDER BY key_version',
          )
        ).rows.map((r: { key_version: string }) => r.key_version);
      } finally {
        await client.end();
      }
    };
    try {
      let server = await runningServer(db.url, { ENCRYPTION_KEYS: v1 });
      try {
        const refused = await cli(`${v1},${v2}`);
        expect(refused.code).not.toBe(0);
        expect(refused.stdout).toBe('');
        expect(refused.stderr).toContain(`pid ${server.spawned.child.pid}`);
        expect(refused.stderr).toContain(hostname());
        expect(refused.stderr).not.toMatch(/^\s+at /m);
        expect(await wrapped()).toEqual(['v1']);
        // The running server still writes tokens.
        const app = await fetch(`${server.base}/applications`, {
          method: 'POST',
          headers: { 'BT-API-KEY': server.managementKey!, 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: 'writer', type: 'private', permissions: ['token:create'] }),
        });
        expect(app.status).toBe(201);
      } finally {
        await stop(server.spawned);
      }
      server = await runningServer(db.url, { ENCRYPTION_KEYS: `${v1},${v2}` });
      try {
        const allowed = await cli(`${v1},${v2}`);
        expect(allowed.code).toBe(0);
        expect(JSON.parse(allowed.stdout)).toEqual({ active_version: 'v2', rewrapped_tenants: 1 });
        expect(allowed.stderr).toContain('PostgreSQL at 127.0.0.1:5432/vault_test_first_hour_rotate');
        expect(await wrapped()).toEqual(['v2']);
      } finally {
        await stop(server.spawned);
      }
    } finally {
      await dropDatabase(db.name);
    }
  }, 240_000);
});

describe('keys rotate with the embedded database and a server running', () => {
  it('the server rotates under its own keys, and refuses when they are not the ones the command was given', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vault-first-hour-rotate-'));
    const env = { DATABASE_URL: '', DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
    const port = await freePort();
    const server = spawnJs('dist/main.js', [], {
      ...env,
      ENCRYPTION_KEYS: '',
      PORT: String(port),
      BOOTSTRAP: 'true',
    });
    try {
      await waitForReady(port, 90_000);
      const rotate = async (keys: string) => {
        const run = spawnJs('dist/cli.js', ['keys', 'rotate'], { ...env, ENCRYPTION_KEYS: keys });
        return { code: await run.exited, stdout: run.stdout(), stderr: run.stderr() };
      };
      const refused = await rotate(`${key()},v2:${randomBytes(32).toString('base64')}`);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(`through the running server (pid ${server.child.pid})`);
      expect(refused.stderr).toMatch(/refused.*encrypts under master key v1, not v2/);
      const allowed = await rotate('');
      expect(allowed.code).toBe(0);
      expect(JSON.parse(allowed.stdout)).toEqual({ active_version: 'v1', rewrapped_tenants: 0 });
    } finally {
      await stop(server);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('small server behaviours', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let key: string;
  let base: string;
  beforeAll(async () => {
    t = await startApp();
    tenant = await newTenant(t);
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:update'],
      })
    ).key;
    await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(t.http.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    t.http.close();
    await t.close();
  });

  it('GET / redirects to the documentation', async () => {
    const res = await request(t.http).get('/').redirects(0);
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/docs');
  });

  const card = () =>
    JSON.stringify({
      type: 'card',
      data: { number: luhnCard(), expiration_month: 12, expiration_year: 2040 },
    });

  it.each([
    ['text/plain', 'text/plain'],
    ['form', 'application/x-www-form-urlencoded'],
  ])(
    'a JSON body sent as %s is a 415 naming the types accepted, without echoing the body',
    async (_name, type) => {
      const body = card();
      const res = await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', key)
        .set('Content-Type', type)
        .send(body);
      expectProblem(res, 415);
      expect(res.body.errors).toEqual({ 'Content-Type': [expect.stringContaining('application/json')] });
      expect(res.headers.accept).toBe('application/json');
      expect(JSON.stringify(res.body)).not.toContain(JSON.parse(body).data.number);
    },
  );

  it('a body without any Content-Type is a 415 too', async () => {
    const res = await new Promise<{ status: number; type?: string; body: string }>((resolve, reject) => {
      const req = httpRequest(`${base}/tokens`, { method: 'POST', headers: { 'BT-API-KEY': key } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode!, type: res.headers['content-type'], body: text }),
        );
      });
      req.on('error', reject);
      req.end(card());
    });
    expect(res.status).toBe(415);
    expect(res.type).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(res.body).detail).toMatch(/Content-Type/);
  });

  it('PATCH /tokens/:id names application/merge-patch+json as well', async () => {
    const created = await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', key)
      .send({ type: 'token', data: 'x' })
      .expect(201);
    const res = await request(t.http)
      .patch(`/tokens/${created.body.id}`)
      .set('BT-API-KEY', key)
      .set('Content-Type', 'text/plain')
      .send(JSON.stringify({ metadata: { a: 'b' } }));
    expectProblem(res, 415);
    expect(res.body.detail).toContain('application/merge-patch+json');
    const ok = await request(t.http)
      .patch(`/tokens/${created.body.id}`)
      .set('BT-API-KEY', key)
      .set('Content-Type', 'application/merge-patch+json')
      .send(JSON.stringify({ metadata: { a: 'b' } }));
    expect(ok.status).toBe(200);
  });

  it('a POST without a body needs no Content-Type (POST /sessions)', async () => {
    const res = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${base}/sessions`,
        { method: 'POST', headers: { 'BT-API-KEY': key } },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(res).not.toBe(415);
    expect(res).toBeLessThan(500);
  });
});
