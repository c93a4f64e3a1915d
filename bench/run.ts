/**
 * `npm run bench`: the built service under load, beside a floor doing the least the same work needs.
 *
 * 1. Builds (`nest build`), creates a database on the PostgreSQL at TEST_ADMIN_DATABASE_URL (default
 *    postgres://postgres@127.0.0.1:5432/postgres), starts `node dist/main.js` on it and the floor
 *    (bench/floor.ts) on the same database, and inserts 1,000,000 audit log rows for the bench tenant
 *    (and, where the service signs checkpoints, waits until they are all in one).
 * 2. Runs each scenario with autocannon from a second process (bench/load.ts), floor and service
 *    alternately, and prints requests/s, tokens/s, p50 and p99 latency and the ratio to the floor.
 *    Tokenize scenarios send distinct card numbers with CVCs, built for each request (bench/load.ts).
 * 3. Starts the service again on the embedded PGlite database and runs the tokenize scenarios there.
 * 4. `sustained`: on a database of its own, the floor and then a fresh service tokenize 100 cards for
 *    BENCH_SUSTAINED_SECONDS (default 60, after BENCH_SUSTAINED_WARMUP seconds, default 5, not counted),
 *    reported per 10-second window; then the checkpoint lag (the bench tenant's audit rows not yet in a
 *    signed checkpoint) and how long it takes to reach 0.
 *
 * The framework floor (bench/floor-nest.ts) does the floor's tokenize inside NestJS with nestjs-pino and
 * nothing of the service: its rows show what the framework costs by itself, before the service's work.
 *
 * The proxy scenarios send through `/proxy` to a local destination (bench/destination.ts), against the
 * same destination called directly (the "floor" rows of those scenarios).
 *
 * 5. `card import`: a file of BENCH_IMPORT_CARDS (default 200,000) cards imported by a fresh service
 *    (bench/imports.ts): cards/s against the target of 5,000, CPU per card, resident memory growth.
 *
 * BENCH_DURATION (seconds per run, default 10) and BENCH_CONNECTIONS (default 10) tune the load;
 * BENCH_ONLY (a part of scenario names, e.g. `proxy`, `tokenize` or `sustained`) runs only the scenarios
 * whose name contains it.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { LoadResult, LoadScenario, LoadWindow } from './load';
import { benchImport } from './imports';
import { api, CheckpointWait, insertAuditRows, runLoad, waitForCheckpoint } from './support';

const ROOT = join(__dirname, '..');
const ADMIN_URL = process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const SERVICE_PORT = 4200;
const FLOOR_PORT = 4100;
const FRAMEWORK_FLOOR_PORT = 4101;
const DESTINATION_PORT = 4300;
const ONLY = process.env.BENCH_ONLY;
const LOG_ROWS = 1_000_000;
const SUSTAINED_SECONDS = Number(process.env.BENCH_SUSTAINED_SECONDS ?? 60);
/**
 * Seconds of load before the sustained run's measured ones, not counted: a process just started runs
 * slower until its code is compiled, which would flatter the last window against the first.
 */
const SUSTAINED_WARMUP = Number(process.env.BENCH_SUSTAINED_WARMUP ?? 5);
const WINDOW_SECONDS = 10;
/** Routing rules set up for the routed transaction scenario (issue 33: at most +2 ms p50 at 100 rules). */
const ROUTE_RULES = 100;
const ROUTED = `create transaction (capture), routed by the last of ${ROUTE_RULES} rules`;

/** How long the checkpointer may take to cover the 1,000,000 rows inserted before the scenarios. */
const CATCH_UP_MS = 600_000;
/** How long the sustained scenario waits for its checkpoint lag to reach 0 (the target is 10 s). */
const LAG_WAIT_MS = 120_000;

const IMPORT = 'card import';
const IMPORT_CARDS = Number(process.env.BENCH_IMPORT_CARDS ?? 200_000);

const wants = (name: string): boolean => !ONLY || name.includes(ONLY);

/** The card the set-up tokenizes once (the token that reads, proxies and transactions use). */
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

type Target = Omit<LoadScenario, 'connections' | 'duration'>;

async function load(scenario: Target, server?: Server, duration = DURATION): Promise<Measured> {
  const before = cpuMs(server);
  const postgresBefore = postgresCpuMs();
  const result: Measured = await runLoad({ ...scenario, connections: CONNECTIONS, duration });
  const after = cpuMs(server);
  if (before !== undefined && after !== undefined && result.requests)
    result.cpuMsPerRequest = (after - before) / result.requests;
  if (result.requests) result.postgresCpuMsPerRequest = postgresCpuSince(postgresBefore) / result.requests;
  return result;
}

interface Setup {
  key: string;
  createOnly: string;
  /** A public application's key: what a checkout page's browser tokenizes with. */
  publicKey: string;
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
    // The public key's load comes from one address: counted, never hit.
    PUBLIC_TOKENIZE_PER_MINUTE: '100000000',
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
      'orchestration:flows:update',
    ],
  });
  const key = app.key as string;
  // A key that creates tokens but reads none: its tokenize is one statement (no card enumeration guard,
  // which only keys that receive fingerprints go through).
  const createOnly = (
    await api(base, managementKey, 'POST', '/applications', {
      name: 'bench, create only',
      type: 'private',
      permissions: ['token:create'],
    })
  ).key as string;
  const publicKey = (
    await api(base, managementKey, 'POST', '/applications', {
      name: 'bench, checkout page',
      type: 'public',
      permissions: ['token:create'],
    })
  ).key as string;
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
  // 100 routing rules, of which only the last matches the routed scenario's payment: each of the 99
  // before holds on its currency and fails on its BIN, so that every one is evaluated.
  for (let i = 1; i <= ROUTE_RULES; i++)
    await api(base, key, 'POST', '/orchestration/flows/card-transaction/actions/route-transaction/rules', {
      description: `bench rule ${i}`,
      conditions:
        i < ROUTE_RULES
          ? [
              { name: 'currency', operator: 'is_one_of', value: ['USD', 'EUR'] },
              {
                name: 'card_bin',
                operator: 'is_one_of',
                value: [`5${String(i).padStart(3, '0')}`, '2221-2720'],
              },
            ]
          : [{ name: 'currency', operator: 'is_one_of', value: ['USD'] }],
      outcome: { type: 'list', result: [connection.id] },
    });
  return {
    server,
    setup: {
      key,
      createOnly,
      publicKey,
      managementKey,
      tenantId,
      tokenId,
      connectionId: connection.id as string,
    },
  };
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

/** A table with its columns padded to their widest cell. */
function printMarkdown(header: string[], lines: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const row = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  process.stdout.write(
    `${row(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n${lines.map(row).join('\n')}\n`,
  );
}

/** Throughput against the floor's: in tokens/s where the scenario creates tokens, else in requests/s. */
const rateRatio = (r: Measured, floor: Measured) => r.rps / floor.rps;
const p99Ratio = (r: Measured, floor: Measured) => r.p99 / Math.max(floor.p99, 1);

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
    const ratio = r.floor
      ? `${fmt(rateRatio(r.result, r.floor), 2)}x | ${fmt(p99Ratio(r.result, r.floor), 2)}x`
      : '';
    return [
      r.scenario,
      r.target,
      fmt(r.result.rps),
      r.tokensPerRequest ? fmt(tokens) : '-',
      fmt(r.result.p50),
      fmt(r.result.p99),
      failures(r.result),
      r.result.cpuMsPerRequest === undefined ? '-' : fmt(r.result.cpuMsPerRequest, 2),
      r.result.postgresCpuMsPerRequest === undefined ? '-' : fmt(r.result.postgresCpuMsPerRequest, 2),
      ratio,
    ];
  });
  printMarkdown(header, lines);
}

/** Non-2xx answers and errors, with the statuses of the answers (`3 (409: 2, 503: 1)`). */
function failures(r: LoadResult): string {
  const statuses = Object.entries(r.non2xxByStatus ?? {}).map(([status, count]) => `${status}: ${count}`);
  const errors = r.errors ? [`errors: ${r.errors}`] : [];
  const detail = [...statuses, ...errors];
  return `${r.non2xx + r.errors}${detail.length ? ` (${detail.join(', ')})` : ''}`;
}

const verdict = (met: boolean) => (met ? 'met' : 'missed');

/** The tokenize targets (issue 32), for the scenarios of this run that have them. */
function printTargets(rows: Row[]): void {
  const on = (name: string) => rows.find((r) => r.scenario === name && r.target === 'service (PostgreSQL)');
  const lines: string[][] = [];
  const hundred = on('tokenize 100 cards');
  if (hundred?.floor) {
    const rate = rateRatio(hundred.result, hundred.floor);
    const p99 = p99Ratio(hundred.result, hundred.floor);
    lines.push([
      'tokenize 100 cards: tokens/s vs floor',
      `${fmt(rate, 2)}x`,
      '>= 0.6x',
      verdict(rate >= 0.6),
    ]);
    lines.push(['tokenize 100 cards: p99 vs floor', `${fmt(p99, 2)}x`, '<= 2x', verdict(p99 <= 2)]);
  }
  const one = on('tokenize 1 card');
  if (one?.floor) {
    const rate = rateRatio(one.result, one.floor);
    lines.push(['tokenize 1 card: tokens/s vs floor', `${fmt(rate, 2)}x`, '>= 0.5x', verdict(rate >= 0.5)]);
  }
  const named = on('create transaction (capture)');
  const routed = on(ROUTED);
  if (named && routed) {
    const added = routed.result.p50 - named.result.p50;
    lines.push([
      `routing by the last of ${ROUTE_RULES} rules: p50 over connection_id`,
      `${added >= 0 ? '+' : ''}${fmt(added, 2)} ms (${fmt(routed.result.p50, 2)} vs ${fmt(named.result.p50, 2)})`,
      '<= +2 ms',
      verdict(added <= 2),
    ]);
  }
  if (!lines.length) return;
  process.stdout.write('\n');
  printMarkdown(['measure', 'measured', 'target', ''], lines);
}

interface Context {
  setup: Setup;
  svc: string;
  fl: string;
  /** The framework floor (bench/floor-nest.ts): the floor's work served by NestJS, nothing of the service. */
  nf: string;
  direct: string;
  floorTokenId: string;
  cursor: string;
  /** A session's key, authorized to create tokens; made by its scenario's `prepare` (it expires in 3 minutes). */
  sessionKey?: string;
}

const JSON_HEADERS = { 'Content-Type': 'application/json' };
const auth = (c: Context) => ({ ...JSON_HEADERS, 'BT-API-KEY': c.setup.key });
const mgmt = (c: Context) => ({ 'BT-API-KEY': c.setup.managementKey });
/** A payment request as a processor without a formula takes it: the card as an object, and its number. */
const charge = (card: string, number: string) =>
  JSON.stringify({ amount: 1299, currency: 'USD', source: card, number, description: 'bench order 1' });
const plainCharge = () => charge(JSON.stringify(card(0).data), card(0).data.number);

/** The floor's tokenize of `cards` distinct cards a request: what every tokenize scenario compares with. */
const floorTokenize =
  (cards: number) =>
  (c: Context): Target => ({
    url: `${c.fl}/tokenize`,
    method: 'POST',
    headers: JSON_HEADERS,
    bodyKind: { cards },
  });

/**
 * The scenarios on the shared database, service against floor (or, for the proxy, against the
 * destination called directly). Tokenize bodies are built per request: distinct cards with CVCs.
 */
const SHARED: {
  name: string;
  tokens: number;
  service: (c: Context) => Target;
  floor?: (c: Context) => Target;
  /** `service` is the framework floor's target, not the service's (measured on that process). */
  framework?: boolean;
  /** Runs after the floor's load, before the service's. */
  prepare?: (c: Context) => Promise<void>;
}[] = [
  {
    name: 'tokenize 1 card',
    tokens: 1,
    service: (c) => ({ url: `${c.svc}/tokenize`, method: 'POST', headers: auth(c), bodyKind: { cards: 1 } }),
    floor: floorTokenize(1),
  },
  {
    name: 'tokenize 100 cards',
    tokens: 100,
    service: (c) => ({
      url: `${c.svc}/tokenize`,
      method: 'POST',
      headers: auth(c),
      bodyKind: { cards: 100 },
    }),
    floor: floorTokenize(100),
  },
  {
    // The browser path: a checkout page's public key, one card, no fingerprint answered (so the card
    // enumeration guard does not count it).
    name: 'tokenize 1 card, a public key',
    tokens: 1,
    service: (c) => ({
      url: `${c.svc}/tokenize`,
      method: 'POST',
      headers: { ...JSON_HEADERS, 'BT-API-KEY': c.setup.publicKey },
      bodyKind: { cards: 1 },
    }),
    floor: floorTokenize(1),
  },
  {
    // A session made by the public key and authorized by the merchant's server to create tokens.
    name: 'tokenize 1 card, a session',
    tokens: 1,
    prepare: async (c) => {
      const session = await api(c.svc, c.setup.publicKey, 'POST', '/sessions');
      await api(c.svc, c.setup.key, 'POST', '/sessions/authorize', {
        nonce: session.nonce,
        permissions: ['token:create'],
      });
      c.sessionKey = session.session_key as string;
    },
    service: (c) => ({
      url: `${c.svc}/tokenize`,
      method: 'POST',
      headers: { ...JSON_HEADERS, 'BT-API-KEY': c.sessionKey! },
      bodyKind: { cards: 1 },
    }),
    floor: floorTokenize(1),
  },
  {
    // What the framework alone costs: the floor's tokenize served by NestJS and nestjs-pino.
    name: 'tokenize 1 card, the framework floor',
    tokens: 1,
    framework: true,
    service: (c) => ({
      url: `${c.nf}/tokenize`,
      method: 'POST',
      headers: JSON_HEADERS,
      bodyKind: { cards: 1 },
    }),
    floor: floorTokenize(1),
  },
  {
    name: 'tokenize 100 cards, the framework floor',
    tokens: 100,
    framework: true,
    service: (c) => ({
      url: `${c.nf}/tokenize`,
      method: 'POST',
      headers: JSON_HEADERS,
      bodyKind: { cards: 100 },
    }),
    floor: floorTokenize(100),
  },
  {
    name: 'tokenize 1 card, a key that reads no token',
    tokens: 1,
    service: (c) => ({
      url: `${c.svc}/tokenize`,
      method: 'POST',
      headers: { ...JSON_HEADERS, 'BT-API-KEY': c.setup.createOnly },
      bodyKind: { cards: 1 },
    }),
  },
  {
    name: 'tokenize 100 cards, a key that reads no token',
    tokens: 100,
    service: (c) => ({
      url: `${c.svc}/tokenize`,
      method: 'POST',
      headers: { ...JSON_HEADERS, 'BT-API-KEY': c.setup.createOnly },
      bodyKind: { cards: 100 },
    }),
  },
  {
    // Search indexes that need Liquid: evaluated in the expression worker threads, not on the event loop.
    name: 'tokenize 1 card, 2 Liquid search indexes',
    tokens: 1,
    service: (c) => ({
      url: `${c.svc}/tokenize`,
      method: 'POST',
      headers: auth(c),
      bodyKind: {
        cards: 1,
        fields: { search_indexes: ['{{ data.number | last4 }}', '{{ data.number | card_bin }}'] },
      },
    }),
  },
  {
    name: 'GET /tokens/{id}',
    tokens: 0,
    service: (c) => ({ url: `${c.svc}/tokens/${c.setup.tokenId}`, method: 'GET', headers: auth(c) }),
    floor: (c) => ({ url: `${c.fl}/tokens/${c.floorTokenId}`, method: 'GET', headers: {} }),
  },
  {
    name: 'tokenize 1 card, idempotency key',
    tokens: 1,
    service: (c) => ({
      url: `${c.svc}/tokenize`,
      method: 'POST',
      headers: auth(c),
      bodyKind: { cards: 1 },
      idempotencyKey: true,
    }),
    floor: floorTokenize(1),
  },
  {
    name: 'create transaction (capture)',
    tokens: 0,
    service: (c) => ({
      url: `${c.svc}/orchestration/transactions`,
      method: 'POST',
      headers: auth(c),
      body: JSON.stringify({
        amount: 1299,
        currency: 'USD',
        connection_id: c.setup.connectionId,
        token: c.setup.tokenId,
        intent: 'capture',
        payment_source: 'card_on_file',
      }),
    }),
  },
  {
    name: ROUTED,
    tokens: 0,
    service: (c) => ({
      url: `${c.svc}/orchestration/transactions`,
      method: 'POST',
      headers: auth(c),
      body: JSON.stringify({
        amount: 1299,
        currency: 'USD',
        token: c.setup.tokenId,
        intent: 'capture',
        payment_source: 'card_on_file',
      }),
    }),
  },
  {
    name: 'GET /logs first page',
    tokens: 0,
    service: (c) => ({ url: `${c.svc}/logs?size=20`, method: 'GET', headers: mgmt(c) }),
    floor: (c) => ({ url: `${c.fl}/logs?tenant=${c.setup.tenantId}`, method: 'GET', headers: {} }),
  },
  {
    name: 'GET /logs 999,000 rows deep',
    tokens: 0,
    service: (c) => ({ url: `${c.svc}/logs?size=20&start=${c.cursor}`, method: 'GET', headers: mgmt(c) }),
    floor: (c) => ({
      url: `${c.fl}/logs?tenant=${c.setup.tenantId}&start=${c.cursor}`,
      method: 'GET',
      headers: {},
    }),
  },
  {
    name: 'proxy POST, no expressions',
    tokens: 0,
    service: (c) => ({
      url: `${c.svc}/proxy/charges`,
      method: 'POST',
      headers: { ...auth(c), 'BT-PROXY-URL': `${c.direct}/v1` },
      body: plainCharge(),
    }),
    floor: (c) => ({
      url: `${c.direct}/v1/charges`,
      method: 'POST',
      headers: JSON_HEADERS,
      body: plainCharge(),
    }),
  },
  {
    name: 'proxy POST, 2 card expressions',
    tokens: 0,
    service: (c) => ({
      url: `${c.svc}/proxy/charges`,
      method: 'POST',
      headers: { ...auth(c), 'BT-PROXY-URL': `${c.direct}/v1` },
      body: charge(`{{ ${c.setup.tokenId} }}`, `{{ ${c.setup.tokenId} | json: '$.number' }}`),
    }),
    floor: (c) => ({
      url: `${c.direct}/v1/charges`,
      method: 'POST',
      headers: JSON_HEADERS,
      body: plainCharge(),
    }),
  },
];

/** The tokenize scenarios run again on PGlite, compared with the service on PostgreSQL. */
const PGLITE: [string, number][] = [
  ['tokenize 1 card', 1],
  ['tokenize 100 cards', 100],
];

const SUSTAINED = 'sustained';

function startFloor(url: string, script = 'bench/floor.ts', port = FLOOR_PORT): Server {
  return start(
    process.execPath,
    [join(ROOT, 'node_modules/ts-node/dist/bin.js'), '--transpile-only', script],
    { DATABASE_URL: url, PORT: String(port) },
  );
}

/** The scenarios on the shared database (1,000,000 audit rows), service and floor alternately. */
async function runShared(url: string, env: Record<string, string>, rows: Row[]): Promise<void> {
  const scenarios = SHARED.filter((s) => wants(s.name));
  let service: Server | undefined;
  let floor: Server | undefined;
  let frameworkFloor: Server | undefined;
  let destination: Server | undefined;
  try {
    const started = await startService(env);
    service = started.server;
    const { setup } = started;
    const svc = `http://127.0.0.1:${SERVICE_PORT}`;
    const pg = new Client({ connectionString: url });
    await pg.connect();
    let cursor: string;
    try {
      const version = (await pg.query('SHOW server_version')).rows[0].server_version as string;
      process.stdout.write(`PostgreSQL ${version}; inserting ${fmt(LOG_ROWS)} audit log rows...\n`);
      await insertAuditRows(pg, setup.tenantId, LOG_ROWS, 'backdated');
      // Where the service signs checkpoints, they take the inserted rows up: let that finish first, so
      // that the scenarios do not share the machine with it.
      const caughtUp = await waitForCheckpoint(pg, setup.tenantId, svc, setup.managementKey, {
        pollMs: 1_000,
        timeoutMs: CATCH_UP_MS,
        progress: (w) => process.stdout.write(`  checkpointed ${fmt(w.treeSize)} of ${fmt(w.rows)} rows\n`),
      });
      process.stdout.write(
        'unavailable' in caughtUp
          ? `checkpoints: not measured (${caughtUp.unavailable})\n`
          : `checkpoints: ${caughtUp.caughtUp ? 'every row' : `${fmt(caughtUp.treeSize)} of ${fmt(caughtUp.rows)} rows`} in a checkpoint after ${fmt(caughtUp.seconds, 1)} s\n`,
      );
      const deep = (
        await pg.query(
          `SELECT id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at FROM audit_logs
            WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC OFFSET 999000 LIMIT 1`,
          [setup.tenantId],
        )
      ).rows[0] as { id: string; at: string };
      cursor = Buffer.from(JSON.stringify([deep.at, deep.id])).toString('base64url');
    } finally {
      await pg.end();
    }

    floor = startFloor(url);
    await waitFor(`http://127.0.0.1:${FLOOR_PORT}/logs?tenant=${setup.tenantId}`, floor);
    const floorToken = (await (
      await fetch(`http://127.0.0.1:${FLOOR_PORT}/tokenize`, {
        method: 'POST',
        body: JSON.stringify(card(0)),
      })
    ).json()) as { id: string };

    if (scenarios.some((s) => s.framework)) {
      frameworkFloor = startFloor(url, 'bench/floor-nest.ts', FRAMEWORK_FLOOR_PORT);
      await waitFor(`http://127.0.0.1:${FRAMEWORK_FLOOR_PORT}/ready`, frameworkFloor);
    }

    destination = start(
      process.execPath,
      [join(ROOT, 'node_modules/ts-node/dist/bin.js'), '--transpile-only', 'bench/destination.ts'],
      { PORT: String(DESTINATION_PORT) },
    );
    const direct = `http://127.0.0.1:${DESTINATION_PORT}`;
    await waitFor(`${direct}/ready`, destination);

    const context: Context = {
      setup,
      svc,
      fl: `http://127.0.0.1:${FLOOR_PORT}`,
      nf: `http://127.0.0.1:${FRAMEWORK_FLOOR_PORT}`,
      direct,
      floorTokenId: floorToken.id,
      cursor,
    };
    for (const s of scenarios) {
      process.stdout.write(`running: ${s.name}\n`);
      const proxy = s.name.startsWith('proxy');
      const floorResult = s.floor ? await load(s.floor(context), proxy ? destination : floor) : undefined;
      await s.prepare?.(context);
      const result = await load(s.service(context), s.framework ? frameworkFloor : service);
      rows.push({
        scenario: s.name,
        target: s.framework ? 'framework floor (NestJS + pino + pg)' : 'service (PostgreSQL)',
        result,
        tokensPerRequest: s.tokens,
        floor: floorResult,
      });
      if (floorResult)
        rows.push({
          scenario: s.name,
          target: proxy ? 'destination called directly' : 'floor (node:http + pg)',
          result: floorResult,
          tokensPerRequest: s.tokens,
        });
    }
  } finally {
    if (service) await stop(service);
    if (floor) await stop(floor);
    if (frameworkFloor) await stop(frameworkFloor);
    if (destination) await stop(destination);
  }
}

/** The tokenize scenarios on the embedded PGlite database. */
async function runPglite(encryptionKeys: string, rows: Row[]): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-bench-pglite-'));
  let service: Server | undefined;
  try {
    const embedded = await startService({
      DATABASE_URL: '',
      DATA_DIR: dataDir,
      ENCRYPTION_KEYS: encryptionKeys,
    });
    service = embedded.server;
    const headers = { ...JSON_HEADERS, 'BT-API-KEY': embedded.setup.key };
    for (const [name, tokens] of PGLITE.filter(([name]) => wants(name))) {
      process.stdout.write(`running (PGlite): ${name}\n`);
      const result = await load(
        {
          url: `http://127.0.0.1:${SERVICE_PORT}/tokenize`,
          method: 'POST',
          headers,
          bodyKind: { cards: tokens },
        },
        service,
      );
      const onPostgres = rows.find((r) => r.scenario === name && r.target === 'service (PostgreSQL)');
      rows.push({
        scenario: name,
        target: 'service (PGlite)',
        result,
        tokensPerRequest: tokens,
        floor: onPostgres?.result,
      });
    }
  } finally {
    if (service) await stop(service);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

interface Sustained {
  service: Measured;
  floor: Measured;
  /** The checkpoint lag after the load, and how long it took to reach 0 (or why it was not measured). */
  lag: CheckpointWait | { unavailable: string };
}

/**
 * Tokenize 100 cards for SUSTAINED_SECONDS on a database of its own: the floor first (its tables are
 * dropped after its run, so that the service does not pay for them), then a service started on it for
 * the purpose, so that no earlier scenario's rows count; each after SUSTAINED_WARMUP seconds of the same
 * load, reported per 10-second window. Then the bench tenant's audit rows not yet in a checkpoint,
 * polled every 250 ms until there are none.
 */
async function runSustained(): Promise<Sustained> {
  const dbName = `vault_bench_sustained_${Date.now()}`;
  await admin(`CREATE DATABASE "${dbName}"`);
  const url = dbUrl(dbName);
  let service: Server | undefined;
  let floor: Server | undefined;
  try {
    const run = async (who: string, base: string, headers: Record<string, string>, server: Server) => {
      const target: Target = { url: `${base}/tokenize`, method: 'POST', headers, bodyKind: { cards: 100 } };
      if (SUSTAINED_WARMUP) {
        process.stdout.write(`running: ${SUSTAINED} (${who}, ${SUSTAINED_WARMUP} s warm-up, not counted)\n`);
        await load(target, server, SUSTAINED_WARMUP);
      }
      process.stdout.write(`running: ${SUSTAINED} (${who}, ${SUSTAINED_SECONDS} s)\n`);
      return load({ ...target, windowSeconds: WINDOW_SECONDS }, server, SUSTAINED_SECONDS);
    };
    floor = startFloor(url);
    await waitFor(`http://127.0.0.1:${FLOOR_PORT}/ready`, floor);
    const floorResult = await run('floor', `http://127.0.0.1:${FLOOR_PORT}`, JSON_HEADERS, floor);
    await stop(floor);
    floor = undefined;
    const pg = new Client({ connectionString: url });
    await pg.connect();
    try {
      await pg.query('DROP TABLE floor_tokens, floor_cvcs, floor_audit');
      await pg.query('CHECKPOINT').catch(() => undefined); // needs a superuser (or pg_checkpoint)
    } finally {
      await pg.end();
    }

    const started = await startService({
      DATABASE_URL: url,
      ENCRYPTION_KEYS: `v1:${randomBytes(32).toString('base64')}`,
    });
    service = started.server;
    const { setup } = started;
    const svc = `http://127.0.0.1:${SERVICE_PORT}`;
    // Connected beforehand, so that the lag is counted the moment the load ends.
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      const result = await run('service', svc, { ...JSON_HEADERS, 'BT-API-KEY': setup.key }, service);
      const lag = await waitForCheckpoint(client, setup.tenantId, svc, setup.managementKey, {
        pollMs: 250,
        timeoutMs: LAG_WAIT_MS,
      });
      return { service: result, floor: floorResult, lag };
    } finally {
      await client.end();
    }
  } finally {
    if (service) await stop(service);
    if (floor) await stop(floor);
    await admin(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  }
}

function printSustained(s: Sustained): void {
  process.stdout.write(
    `\n${SUSTAINED}: tokenize 100 cards for ${SUSTAINED_SECONDS} s on a fresh database (after ${SUSTAINED_WARMUP} s of warm-up), ${CONNECTIONS} connections, per ${WINDOW_SECONDS}-second window\n\n`,
  );
  const service = s.service.windows ?? [];
  const floor = s.floor.windows ?? [];
  const cell = (w: LoadWindow | undefined, pick: (w: LoadWindow) => string) => (w ? pick(w) : '-');
  printMarkdown(
    ['window', 'service req/s', 'tokens/s', 'p50 ms', 'p99 ms', 'non-2xx', 'floor req/s', 'floor p99 ms'],
    service.map((w, i) => [
      `${fmt(w.from)}-${fmt(w.to)} s`,
      fmt(w.rps, 1),
      fmt(w.rps * 100),
      fmt(w.p50),
      fmt(w.p99),
      String(w.non2xx),
      cell(floor[i], (f) => fmt(f.rps, 1)),
      cell(floor[i], (f) => fmt(f.p99)),
    ]),
  );
  const lines: string[][] = [];
  const ratio = (windows: LoadWindow[]) =>
    windows.length >= 2 && windows[0].rps ? windows[windows.length - 1].rps / windows[0].rps : undefined;
  const held = ratio(service);
  lines.push([
    'service: last window / first window',
    held === undefined ? '-' : `${fmt(held, 2)}x`,
    '>= 0.90x',
    held === undefined ? '' : verdict(held >= 0.9),
  ]);
  const floorHeld = ratio(floor);
  lines.push([
    'floor: last window / first window',
    floorHeld === undefined ? '-' : `${fmt(floorHeld, 2)}x`,
    '',
    '',
  ]);
  lines.push([
    'service vs floor over the run: tokens/s | p99',
    `${fmt(rateRatio(s.service, s.floor), 2)}x | ${fmt(p99Ratio(s.service, s.floor), 2)}x`,
    '(as tokenize 100 cards: >= 0.6x | <= 2x)',
    '',
  ]);
  lines.push([
    'non-2xx and errors (service | floor)',
    `${failures(s.service)} | ${failures(s.floor)}`,
    '0',
    '',
  ]);
  if ('unavailable' in s.lag) {
    lines.push(['checkpoint lag at the end', `not measured: ${s.lag.unavailable}`, '', '']);
  } else {
    const lag = s.lag;
    lines.push([
      'checkpoint lag at the end (audit rows not in a checkpoint)',
      `${fmt(lag.lagAtStart)} of ${fmt(lag.rows)} rows`,
      '',
      '',
    ]);
    lines.push([
      'seconds until every row was in a checkpoint',
      lag.caughtUp
        ? fmt(lag.seconds, 2)
        : `> ${fmt(lag.seconds, 0)} (${fmt(lag.rows - lag.treeSize)} rows left)`,
      '<= 10',
      verdict(lag.caughtUp && lag.seconds <= 10),
    ]);
  }
  process.stdout.write('\n');
  printMarkdown(['measure', 'measured', 'target', ''], lines);
}

async function main(): Promise<void> {
  process.stdout.write(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), ${fmt(totalmem() / 2 ** 30, 1)} GiB; node ${process.version}; ${DURATION}s per run, ${CONNECTIONS} connections\n`,
  );
  execFileSync('npx', ['nest', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const rows: Row[] = [];
  const encryptionKeys = `v1:${randomBytes(32).toString('base64')}`;
  if (SHARED.some((s) => wants(s.name))) {
    const dbName = `vault_bench_${Date.now()}`;
    await admin(`CREATE DATABASE "${dbName}"`);
    try {
      await runShared(dbUrl(dbName), { DATABASE_URL: dbUrl(dbName), ENCRYPTION_KEYS: encryptionKeys }, rows);
    } finally {
      await admin(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    }
  }
  if (PGLITE.some(([name]) => wants(name))) await runPglite(encryptionKeys, rows);
  if (rows.some((r) => r.target === 'service (PGlite)'))
    process.stdout.write('\n(the PGlite rows compare with the service on PostgreSQL, not with the floor)\n');
  if (rows.length) {
    process.stdout.write('\n');
    printTable(rows);
    printTargets(rows);
  }
  if (wants(SUSTAINED)) printSustained(await runSustained());
  if (wants(IMPORT)) {
    const m = await benchImport(ADMIN_URL, IMPORT_CARDS);
    process.stdout.write(`\n${IMPORT}: ${fmt(m.cards)} cards\n\n`);
    printMarkdown(
      ['measure', 'measured', 'target', ''],
      [
        [
          'cards/s (upload to completed)',
          fmt(m.cardsPerSecond),
          '>= 5,000',
          verdict(m.cardsPerSecond >= 5000),
        ],
        ['seconds', fmt(m.seconds, 1), '', ''],
        ['server CPU per card (us)', fmt(m.serverCpuUsPerCard, 1), '', ''],
        ['PostgreSQL CPU per card (us)', fmt(m.postgresCpuUsPerCard, 1), '', ''],
        ['server RSS growth (MiB)', fmt(m.rssGrowthMiB), '< 200', verdict(m.rssGrowthMiB < 200)],
      ],
    );
  }
}

void main().catch((error: unknown) => {
  process.stderr.write(`${String(error instanceof Error ? error.stack : error)}\n`);
  process.exit(1);
});
