/**
 * `npm run bench`: the built service under load, beside a floor doing the least the same work needs.
 *
 * 1. Builds (`nest build`), creates a database on the PostgreSQL at TEST_ADMIN_DATABASE_URL (default
 *    postgres://postgres@127.0.0.1:5432/postgres), starts `node dist/main.js` on it and the floor
 *    (bench/floor.ts) on the same database, and inserts 1,000,000 audit log rows for the bench tenant.
 * 2. Runs each scenario with autocannon from a second process (bench/load.ts), floor and service
 *    alternately, and prints requests/s, tokens/s, p50 and p99 latency and the ratio to the floor.
 * 3. Starts the service again on the embedded PGlite database and runs the tokenize scenarios there.
 *
 * The proxy scenarios send through `/proxy` to a local destination (bench/destination.ts), against the
 * same destination called directly (the "floor" rows of those scenarios).
 *
 * BENCH_DURATION (seconds per run, default 10) and BENCH_CONNECTIONS (default 10) tune the load;
 * BENCH_ONLY (a part of scenario names, e.g. `proxy`) runs only the scenarios whose name contains it.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { LoadResult, LoadScenario } from './load';
import { api } from './support';

const ROOT = join(__dirname, '..');
const ADMIN_URL = process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const SERVICE_PORT = 4200;
const FLOOR_PORT = 4100;
const DESTINATION_PORT = 4300;
const ONLY = process.env.BENCH_ONLY;
const LOG_ROWS = 1_000_000;

const card = (i: number) => ({
  type: 'card',
  data: { number: '4242424242424242', expiration_month: 1 + (i % 12), expiration_year: 2031 },
});

function dbUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin(sql: string): Promise<void> {
  const client = new Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

interface Server {
  child: ChildProcess;
  output: () => string;
}

function start(command: string, args: string[], env: Record<string, string>): Server {
  let output = '';
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => {
    if (output.length < 100_000) output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    if (output.length < 100_000) output += chunk.toString();
  });
  return { child, output: () => output };
}

async function waitFor(url: string, server: Server, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null) throw new Error(`server exited:\n${server.output()}`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} not ready:\n${server.output()}`);
}

async function stop(server: Server): Promise<void> {
  if (server.child.exitCode !== null) return;
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  if (server.child.exitCode === null) server.child.kill('SIGKILL');
}

/**
 * A load's result, with the CPU time (user and system) the server under test spent per request, and
 * PostgreSQL's (every local `postgres` process, the embedded database's excepted: it runs in the server).
 */
type Measured = LoadResult & { cpuMsPerRequest?: number; postgresCpuMsPerRequest?: number };

/** The CPU time a process has used, in ms (Linux: utime + stime from /proc, in ticks of 10 ms). */
function cpuMs(server: Server | undefined): number | undefined {
  try {
    const fields = readFileSync(`/proc/${server?.child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** The CPU time each PostgreSQL process on this machine has used, in ms, by pid. */
function postgresCpuMs(): Map<string, number> {
  const byPid = new Map<string, number>();
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.split(') ')[1].split(' ');
      byPid.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // gone meanwhile
    }
  }
  return byPid;
}

/** What PostgreSQL's processes used between two samples (a process that ended meanwhile is not counted). */
function postgresCpuSince(before: Map<string, number>): number {
  let total = 0;
  for (const [pid, ms] of postgresCpuMs()) total += ms - (before.get(pid) ?? 0);
  return total;
}

function load(scenario: Omit<LoadScenario, 'connections' | 'duration'>, server?: Server): Measured {
  const full: LoadScenario = { ...scenario, connections: CONNECTIONS, duration: DURATION };
  const before = cpuMs(server);
  const postgresBefore = postgresCpuMs();
  const out = execFileSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/ts-node/dist/bin.js'),
      '--transpile-only',
      join(ROOT, 'bench/load.ts'),
      JSON.stringify(full),
    ],
    { cwd: ROOT, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
  );
  const result = JSON.parse(out) as Measured;
  const after = cpuMs(server);
  if (before !== undefined && after !== undefined && result.requests)
    result.cpuMsPerRequest = (after - before) / result.requests;
  if (result.requests) result.postgresCpuMsPerRequest = postgresCpuSince(postgresBefore) / result.requests;
  return result;
}

interface Setup {
  key: string;
  managementKey: string;
  tenantId: string;
  tokenId: string;
  connectionId: string;
}

async function startService(env: Record<string, string>): Promise<{ server: Server; setup: Setup }> {
  const server = start(process.execPath, ['dist/main.js'], {
    PORT: String(SERVICE_PORT),
    BOOTSTRAP: 'true',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    // The load comes from one key: far above what it sends, so that the limit is counted, never hit.
    RATE_LIMIT_PER_MINUTE: '100000000',
    // The proxy scenarios' destination listens on loopback.
    OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    ...env,
  });
  const base = `http://127.0.0.1:${SERVICE_PORT}`;
  await waitFor(`${base}/health/ready`, server);
  const managementKey = /(key_mgt_[0-9A-Za-z]+)/.exec(server.output())?.[1];
  if (!managementKey) throw new Error(`no bootstrap key printed:\n${server.output()}`);
  const tenantId = (await api(base, managementKey, 'GET', '/tenants/self')).id as string;
  const app = await api(base, managementKey, 'POST', '/applications', {
    name: 'bench',
    type: 'private',
    permissions: [
      'token:create',
      'token:read',
      'token:use',
      'orchestration:connection_formulas',
      'orchestration:connections:create',
      'orchestration:connections:update',
    ],
  });
  const key = app.key as string;
  const tokenId = (await api(base, key, 'POST', '/tokenize', card(0))).id as string;
  const connection = await api(base, key, 'POST', '/orchestration/connections', {
    connection_formula_id: 'stripe-card',
    method: 'card',
    display_name: 'Stripe',
    fields: [{ key: 'secret_key', value: 'sk_test_bench' }],
    accepted_countries: ['US'],
    accepted_currencies: ['USD'],
  });
  for (let i = 0; i < 50; i++) {
    const got = await api(base, key, 'GET', `/orchestration/connections/${connection.id}`);
    if (got.status === 'available') break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { server, setup: { key, managementKey, tenantId, tokenId, connectionId: connection.id as string } };
}

interface Row {
  scenario: string;
  target: string;
  result: Measured;
  tokensPerRequest: number;
  floor?: Measured;
  floorTokensPerRequest?: number;
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function printTable(rows: Row[]): void {
  const header = [
    'scenario',
    'target',
    'req/s',
    'tokens/s',
    'p50 ms',
    'p99 ms',
    'non-2xx',
    'CPU ms/req',
    'PostgreSQL CPU ms/req',
    'vs floor (tokens/s | p99)',
  ];
  const lines = rows.map((r) => {
    const tokens = r.result.rps * r.tokensPerRequest;
    let ratio = '';
    if (r.floor) {
      // Throughput in tokens/s where the scenario creates tokens, else in requests/s.
      const rate = r.tokensPerRequest
        ? tokens / (r.floor.rps * r.tokensPerRequest)
        : r.result.rps / r.floor.rps;
      ratio = `${fmt(rate, 2)}x | ${fmt(r.result.p99 / Math.max(r.floor.p99, 1), 2)}x`;
    }
    return [
      r.scenario,
      r.target,
      fmt(r.result.rps),
      r.tokensPerRequest ? fmt(tokens) : '-',
      fmt(r.result.p50),
      fmt(r.result.p99),
      String(r.result.non2xx + r.result.errors),
      r.result.cpuMsPerRequest === undefined ? '-' : fmt(r.result.cpuMsPerRequest, 2),
      r.result.postgresCpuMsPerRequest === undefined ? '-' : fmt(r.result.postgresCpuMsPerRequest, 2),
      ratio,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const row = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  process.stdout.write(
    `${row(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n${lines.map(row).join('\n')}\n`,
  );
}

async function main(): Promise<void> {
  process.stdout.write(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), ${fmt(totalmem() / 2 ** 30, 1)} GiB; node ${process.version}; ${DURATION}s per run, ${CONNECTIONS} connections\n`,
  );
  execFileSync('npx', ['nest', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const dbName = `vault_bench_${Date.now()}`;
  await admin(`CREATE DATABASE "${dbName}"`);
  const url = dbUrl(dbName);
  const env = { DATABASE_URL: url, ENCRYPTION_KEYS: `v1:${randomBytes(32).toString('base64')}` };
  const rows: Row[] = [];
  let service: Server | undefined;
  let floor: Server | undefined;
  let destination: Server | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-bench-pglite-'));
  try {
    const started = await startService(env);
    service = started.server;
    const { setup } = started;
    const pg = new Client({ connectionString: url });
    await pg.connect();
    const version = (await pg.query('SHOW server_version')).rows[0].server_version as string;
    process.stdout.write(`PostgreSQL ${version}; inserting ${fmt(LOG_ROWS)} audit log rows...\n`);
    await pg.query(
      // Inserted as already sealed (placeholder chain values), so that the chain job has nothing to do.
      `INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at,
                               seq, prev_hash, hash)
       SELECT gen_random_uuid(), $1, NULL, 'application', 'token', gen_random_uuid()::text, 'read', 'Token read',
              now() - interval '1 hour' - (i * interval '7 seconds'), 10000000 + i, '\\x00'::bytea, '\\x00'::bytea
         FROM generate_series(1, ${LOG_ROWS}) AS i`,
      [setup.tenantId],
    );
    await pg.query(
      `INSERT INTO audit_chain_heads (tenant_id, seq, hash) VALUES ($1, ${10_000_000 + LOG_ROWS}, '\\x00'::bytea)
       ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash`,
      [setup.tenantId],
    );
    await pg.query('ANALYZE audit_logs');
    const deep = (
      await pg.query(
        `SELECT id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at FROM audit_logs
          WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC OFFSET 999000 LIMIT 1`,
        [setup.tenantId],
      )
    ).rows[0] as { id: string; at: string };
    await pg.end();
    const cursor = Buffer.from(JSON.stringify([deep.at, deep.id])).toString('base64url');

    floor = start(
      process.execPath,
      [join(ROOT, 'node_modules/ts-node/dist/bin.js'), '--transpile-only', 'bench/floor.ts'],
      {
        DATABASE_URL: url,
        PORT: String(FLOOR_PORT),
      },
    );
    await waitFor(`http://127.0.0.1:${FLOOR_PORT}/logs?tenant=${setup.tenantId}`, floor);
    const floorToken = (await (
      await fetch(`http://127.0.0.1:${FLOOR_PORT}/tokenize`, {
        method: 'POST',
        body: JSON.stringify(card(0)),
      })
    ).json()) as { id: string };

    destination = start(
      process.execPath,
      [join(ROOT, 'node_modules/ts-node/dist/bin.js'), '--transpile-only', 'bench/destination.ts'],
      { PORT: String(DESTINATION_PORT) },
    );
    const direct = `http://127.0.0.1:${DESTINATION_PORT}`;
    await waitFor(`${direct}/ready`, destination);

    const svc = `http://127.0.0.1:${SERVICE_PORT}`;
    const fl = `http://127.0.0.1:${FLOOR_PORT}`;
    const json = { 'Content-Type': 'application/json' };
    const auth = { ...json, 'BT-API-KEY': setup.key };
    const mgmt = { 'BT-API-KEY': setup.managementKey };
    const one = JSON.stringify(card(1));
    const hundred = JSON.stringify(Array.from({ length: 100 }, (_, i) => card(i)));
    // Search indexes that need Liquid: evaluated in the expression worker threads, not on the event loop.
    const indexed = JSON.stringify({
      ...card(1),
      search_indexes: ['{{ data.number | last4 }}', '{{ data.number | card_bin }}'],
    });

    // A payment request as a processor without a formula takes it: the card as an object, and its number.
    const charge = (card: string, number: string) =>
      JSON.stringify({ amount: 1299, currency: 'USD', source: card, number, description: 'bench order 1' });
    const proxied = charge(`{{ ${setup.tokenId} }}`, `{{ ${setup.tokenId} | json: '$.number' }}`);
    const plain = charge(JSON.stringify(card(0).data), card(0).data.number);
    const proxyHeaders = { ...auth, 'BT-PROXY-URL': `${direct}/v1` };

    const scenarios: {
      name: string;
      service: Omit<LoadScenario, 'connections' | 'duration'>;
      floor?: Omit<LoadScenario, 'connections' | 'duration'>;
      tokens: number;
      floorTokens?: number;
    }[] = [
      {
        name: 'tokenize 1 card',
        tokens: 1,
        service: { url: `${svc}/tokenize`, method: 'POST', headers: auth, body: one },
        floor: { url: `${fl}/tokenize`, method: 'POST', headers: json, body: one },
      },
      {
        name: 'tokenize 100 cards',
        tokens: 100,
        service: { url: `${svc}/tokenize`, method: 'POST', headers: auth, body: hundred },
        floor: { url: `${fl}/tokenize`, method: 'POST', headers: json, body: hundred },
      },
      {
        name: 'tokenize 1 card, 2 Liquid search indexes',
        tokens: 1,
        service: { url: `${svc}/tokenize`, method: 'POST', headers: auth, body: indexed },
      },
      {
        name: 'GET /tokens/{id}',
        tokens: 0,
        service: { url: `${svc}/tokens/${setup.tokenId}`, method: 'GET', headers: auth },
        floor: { url: `${fl}/tokens/${floorToken.id}`, method: 'GET', headers: {} },
      },
      {
        name: 'tokenize 1 card, idempotency key',
        tokens: 1,
        service: { url: `${svc}/tokenize`, method: 'POST', headers: auth, body: one, idempotencyKey: true },
        floor: { url: `${fl}/tokenize`, method: 'POST', headers: json, body: one },
      },
      {
        name: 'create transaction (capture)',
        tokens: 0,
        service: {
          url: `${svc}/orchestration/transactions`,
          method: 'POST',
          headers: auth,
          body: JSON.stringify({
            amount: 1299,
            currency: 'USD',
            connection_id: setup.connectionId,
            token: setup.tokenId,
            intent: 'capture',
            payment_source: 'card_on_file',
          }),
        },
      },
      {
        name: 'GET /logs first page',
        tokens: 0,
        service: { url: `${svc}/logs?size=20`, method: 'GET', headers: mgmt },
        floor: { url: `${fl}/logs?tenant=${setup.tenantId}`, method: 'GET', headers: {} },
      },
      {
        name: 'GET /logs 999,000 rows deep',
        tokens: 0,
        service: { url: `${svc}/logs?size=20&start=${cursor}`, method: 'GET', headers: mgmt },
        floor: { url: `${fl}/logs?tenant=${setup.tenantId}&start=${cursor}`, method: 'GET', headers: {} },
      },
    ];
    scenarios.push(
      {
        name: 'proxy POST, no expressions',
        tokens: 0,
        service: { url: `${svc}/proxy/charges`, method: 'POST', headers: proxyHeaders, body: plain },
        floor: { url: `${direct}/v1/charges`, method: 'POST', headers: json, body: plain },
      },
      {
        name: 'proxy POST, 2 card expressions',
        tokens: 0,
        service: { url: `${svc}/proxy/charges`, method: 'POST', headers: proxyHeaders, body: proxied },
        floor: { url: `${direct}/v1/charges`, method: 'POST', headers: json, body: plain },
      },
    );
    for (const s of scenarios) {
      if (ONLY && !s.name.includes(ONLY)) continue;
      process.stdout.write(`running: ${s.name}\n`);
      const floorResult = s.floor
        ? load(s.floor, s.name.startsWith('proxy') ? destination : floor)
        : undefined;
      const result = load(s.service, service);
      rows.push({
        scenario: s.name,
        target: 'service (PostgreSQL)',
        result,
        tokensPerRequest: s.tokens,
        floor: floorResult,
      });
      if (floorResult)
        rows.push({
          scenario: s.name,
          target: s.name.startsWith('proxy') ? 'destination called directly' : 'floor (node:http + pg)',
          result: floorResult,
          tokensPerRequest: s.tokens,
        });
    }
    await stop(service);
    service = undefined;
    if (ONLY && !'tokenize'.includes(ONLY) && !ONLY.includes('tokenize')) {
      printTable(rows);
      return;
    }

    const embedded = await startService({
      DATABASE_URL: '',
      DATA_DIR: dataDir,
      ENCRYPTION_KEYS: env.ENCRYPTION_KEYS,
    });
    service = embedded.server;
    const embeddedAuth = { ...json, 'BT-API-KEY': embedded.setup.key };
    for (const [name, body, tokens] of [
      ['tokenize 1 card', one, 1],
      ['tokenize 100 cards', hundred, 100],
    ] as const) {
      process.stdout.write(`running (PGlite): ${name}\n`);
      const result = load({ url: `${svc}/tokenize`, method: 'POST', headers: embeddedAuth, body }, service);
      const onPostgres = rows.find((r) => r.scenario === name && r.target === 'service (PostgreSQL)');
      rows.push({
        scenario: name,
        target: 'service (PGlite)',
        result,
        tokensPerRequest: tokens,
        floor: onPostgres?.result,
      });
    }
    process.stdout.write(
      '\n(the PGlite rows compare with the service on PostgreSQL, not with the floor)\n\n',
    );
    printTable(rows);
  } finally {
    if (service) await stop(service);
    if (floor) await stop(floor);
    if (destination) await stop(destination);
    rmSync(dataDir, { recursive: true, force: true });
    await admin(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  }
}

void main().catch((error: unknown) => {
  process.stderr.write(`${String(error instanceof Error ? error.stack : error)}\n`);
  process.exit(1);
});
