/**
 * `npm run bench:vault`: what a large vault and a heavy load cost (issue 21's last two targets).
 *
 * 1. Builds, creates a database, starts the built service on it (as `npm run bench` does) and makes one
 *    card token with a search index.
 * 2. Measures, on the nearly empty vault: `GET /tokens/{id}`, search by fingerprint, search by index
 *    (`data:`), and tokenize with `deduplicate_token` (the same card again).
 * 3. Inserts 1,000,000 tokens (and as many search index rows) for the same tenant with SQL, VACUUMs,
 *    and measures the same four again: the p99 ratios are the target (at most 1.3x).
 * 4. Samples the service's resident memory (VmRSS) idle, during a tokenize-100 load (distinct cards with
 *    CVCs, as `npm run bench` sends), and 10 s after it.
 * 5. Proofs: inserts 1,000,000 audit rows for the tenant with SQL, waits (at most 10 minutes) until the
 *    latest signed checkpoint covers them all, printing how long the checkpointer took, VACUUMs, then loads
 *    `GET /logs/{id}/proof` for 10,000 rows picked at random (p99 target under 20 ms) and
 *    `GET /logs/consistency` between the checkpoint before the insert and the one after it.
 *
 * BENCH_DURATION and BENCH_CONNECTIONS tune the load as for `npm run bench`; BENCH_ONLY (`tokens`,
 * `memory` or `proof`) runs only the parts whose name contains it. BENCH_PROFILE_OUT=<file> profiles the
 * proofs' load (`node --cpu-prof`, summarised as `npm run bench:profile` does) and keeps the profile there.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { LoadResult, LoadScenario } from './load';
import { summarise } from './profile';
import { api, checkpointSize, insertAuditRows, runLoad, serviceEnv, waitForCheckpoint } from './support';

const ROOT = join(__dirname, '..');
const ADMIN_URL = process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const PORT = 4210;
const VAULT = 1_000_000;
const AUDIT_ROWS = 1_000_000;
/** Rows whose proofs the proof scenario asks for, picked at random. */
const PROOF_IDS = 10_000;
/** How long the checkpointer may take to cover the inserted audit rows. */
const CATCH_UP_MS = 600_000;
const DB = `vault_bench_large_${process.pid}`;
const ONLY = process.env.BENCH_ONLY;
const PROFILE_OUT = process.env.BENCH_PROFILE_OUT;
const wants = (part: string): boolean => !ONLY || part.includes(ONLY);

const dbUrl = (name: string): string => {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
};

async function sql(url: string, text: string, params: unknown[] = []): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text, params);
  } finally {
    await client.end();
  }
}

/** Runs bench/load.ts in its own process without blocking this one (so memory can be sampled meanwhile). */
const load = (scenario: Omit<LoadScenario, 'connections' | 'duration'>): Promise<LoadResult> =>
  runLoad({ ...scenario, connections: CONNECTIONS, duration: DURATION });

const rssMb = (child: ChildProcess): number => {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
};

const BASE = `http://127.0.0.1:${PORT}`;

/** The built service on `env`, once it answers `/health/ready`; its output so far in `output()`. */
async function startService(
  env: NodeJS.ProcessEnv,
  nodeOptions: string[] = [],
): Promise<{ child: ChildProcess; output: () => string }> {
  let output = '';
  const child = spawn(process.execPath, [...nodeOptions, 'dist/main.js'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => output.length < 100_000 && (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => output.length < 100_000 && (output += chunk.toString()));
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${PORT}/health/ready`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { child, output: () => output };
}

async function stopService(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function main(): Promise<void> {
  execFileSync('npx', ['nest', 'build'], { cwd: ROOT, stdio: 'inherit' });
  await sql(ADMIN_URL, `CREATE DATABASE ${DB}`);
  // One environment for every start: the master key in it unwraps the tenant's keys after a restart.
  const env = serviceEnv(dbUrl(DB), PORT);
  let server = await startService(env);
  try {
    const output = server.output();
    const managementKey = /(key_mgt_[0-9A-Za-z]+)/.exec(output)?.[1];
    if (!managementKey) throw new Error(`no bootstrap key:\n${output}`);
    const tenantId = (await api(BASE, managementKey, 'GET', '/tenants/self')).id as string;
    const key = (
      await api(BASE, managementKey, 'POST', '/applications', {
        name: 'bench',
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:search'],
      })
    ).key as string;
    const auth = { 'Content-Type': 'application/json', 'BT-API-KEY': key };
    if (wants('tokens')) await tokens(tenantId, key, auth);
    if (wants('memory')) await memory(server.child, auth);
    if (wants('proof')) {
      // BENCH_PROFILE_OUT: the proofs' load alone under `node --cpu-prof`, in a service started again
      // once the checkpointer has caught up (its tile cache as empty as the first service's was).
      const profileDir = PROFILE_OUT ? mkdtempSync(join(tmpdir(), 'vault-proof-profile-')) : undefined;
      const profiled = profileDir
        ? async () => {
            await stopService(server.child);
            server = await startService(env, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]);
          }
        : undefined;
      await proofs(BASE, dbUrl(DB), tenantId, managementKey, profiled);
      if (profileDir) {
        await stopService(server.child);
        const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
        if (file) {
          summarise(join(profileDir, file));
          copyFileSync(join(profileDir, file), PROFILE_OUT!);
        }
        rmSync(profileDir, { recursive: true, force: true });
      }
    }
  } finally {
    await stopService(server.child);
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  }
}

/** Reads, searches and deduplicating writes on a nearly empty vault and on one of 1,000,000 tokens. */
async function tokens(tenantId: string, key: string, auth: Record<string, string>): Promise<void> {
  // One card, the same on every request: deduplication is what the last scenario measures.
  const cardBody = {
    type: 'card',
    data: { number: '4242424242424242', expiration_month: 1, expiration_year: 2031 },
    search_indexes: ['{{ data.number | last4 }}'],
  };
  const token = await api(BASE, key, 'POST', '/tokens', cardBody);
  const scenarios: [string, Omit<LoadScenario, 'connections' | 'duration'>][] = [
    ['GET /tokens/{id}', { url: `${BASE}/tokens/${token.id}`, method: 'GET', headers: auth }],
    [
      'search by fingerprint',
      {
        url: `${BASE}/v2/tokens/search`,
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ query: `fingerprint:${token.fingerprint}`, size: 10 }),
      },
    ],
    [
      'search by index (data:)',
      {
        url: `${BASE}/v2/tokens/search`,
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ query: 'data:4242', size: 10 }),
      },
    ],
    [
      'tokenize with deduplicate_token',
      {
        url: `${BASE}/tokens`,
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ ...cardBody, deduplicate_token: true }),
      },
    ],
  ];
  const empty: LoadResult[] = [];
  for (const [name, scenario] of scenarios) {
    process.stdout.write(`empty vault: ${name}\n`);
    empty.push(await load(scenario));
  }

  process.stdout.write(`inserting ${VAULT.toLocaleString('en-US')} tokens...\n`);
  await sql(
    dbUrl(DB),
    `INSERT INTO tokens (id, tenant_id, type, data, mask, card_brand, card_bin, fingerprint, fingerprint_expression,
                         containers, created_at)
     SELECT gen_random_uuid()::text, $1, 'card', '\\x00', '{"number": "XXXXXXXXXXXX0000"}', 'visa', '42424242',
            md5(i::text), '{{ data.number }}', '{/pci/high/}', now() - (i || ' seconds')::interval
       FROM generate_series(1, ${VAULT}) AS i`,
    [tenantId],
  );
  await sql(
    dbUrl(DB),
    `INSERT INTO token_search_indexes (token_id, tenant_id, digest)
     SELECT id, tenant_id, decode(md5(id), 'hex') FROM tokens WHERE tenant_id = $1 AND data = '\\x00'`,
    [tenantId],
  );
  // A vault that large in steady state: autovacuum has long since processed the bulk insert (left to
  // itself, it would run during the measurements below and weigh on their tails).
  await sql(dbUrl(DB), 'VACUUM ANALYZE');
  const large: LoadResult[] = [];
  for (const [name, scenario] of scenarios) {
    process.stdout.write(`1,000,000 tokens: ${name}\n`);
    large.push(await load(scenario));
  }

  process.stdout.write(
    '\n| scenario | empty vault: req/s, p50, p99 ms | 1,000,000 tokens: req/s, p50, p99 ms | p99 ratio (target <= 1.3x) |\n',
  );
  process.stdout.write('|---|---|---|---|\n');
  scenarios.forEach(([name], i) => {
    const e = empty[i];
    const l = large[i];
    process.stdout.write(
      `| ${name} | ${Math.round(e.rps)}, ${e.p50}, ${e.p99} | ${Math.round(l.rps)}, ${l.p50}, ${l.p99} | ${(l.p99 / e.p99).toFixed(2)}x |\n`,
    );
  });
}

/** Resident memory idle, under a tokenize-100 load of distinct cards, and 10 s after it. */
async function memory(server: ChildProcess, auth: Record<string, string>): Promise<void> {
  process.stdout.write('memory under a tokenize-100 load...\n');
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  const idle = rssMb(server);
  let peak = idle;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(server))), 200);
  const loaded = await load({
    url: `${BASE}/tokenize`,
    method: 'POST',
    headers: auth,
    bodyKind: { cards: 100 },
  });
  clearInterval(sampler);
  await new Promise((resolve) => setTimeout(resolve, 10_000));
  const after = rssMb(server);
  process.stdout.write(
    `\nresident memory: idle ${idle.toFixed(0)} MB, peak under tokenize-100 (${Math.round(loaded.rps)} req/s) ${peak.toFixed(0)} MB (target < 300), ` +
      `10 s after ${after.toFixed(0)} MB (${((after / idle - 1) * 100).toFixed(0)}% over idle; target within 20%)\n`,
  );
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Proofs on a tenant of 1,000,000 audit rows and more: the checkpointer's catch-up on rows inserted in
 * bulk, then `GET /logs/{id}/proof` for rows picked at random, and `GET /logs/consistency` between the
 * checkpoint before the insert and the one covering it. Skipped, saying why, where the service signs no
 * checkpoints.
 */
export async function proofs(
  base: string,
  databaseUrl: string,
  tenantId: string,
  managementKey: string,
  beforeLoad?: () => Promise<void>,
): Promise<void> {
  const available = await checkpointSize(base, managementKey);
  if ('unavailable' in available) {
    process.stdout.write(
      `\nproofs: not measured (${available.unavailable}; the service signs no checkpoints)\n`,
    );
    return;
  }
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    // The rows the parts before wrote, all in a checkpoint first: its size is the consistency proof's first.
    const before = await waitForCheckpoint(db, tenantId, base, managementKey, { timeoutMs: 60_000 });
    if ('unavailable' in before) throw new Error(before.unavailable);
    const first = before.caughtUp && before.treeSize > 0 ? before.treeSize : undefined;

    process.stdout.write(`\ninserting ${AUDIT_ROWS.toLocaleString('en-US')} audit rows...\n`);
    const insertStart = Date.now();
    const committedAt = await insertAuditRows(db, tenantId, AUDIT_ROWS, 'appended');
    const waitStart = Date.now();
    const caught = await waitForCheckpoint(db, tenantId, base, managementKey, {
      pollMs: 250,
      timeoutMs: CATCH_UP_MS,
      progress: (w) =>
        process.stdout.write(
          `  checkpointed ${w.treeSize.toLocaleString('en-US')} of ${w.rows.toLocaleString('en-US')}\n`,
        ),
    });
    if ('unavailable' in caught) throw new Error(caught.unavailable);
    const rows = caught.rows;
    // From the commit (every row became visible at once) to the first checkpoint covering them all.
    const catchUpMs = waitStart - committedAt + caught.seconds * 1000;
    process.stdout.write(
      caught.caughtUp
        ? `checkpointer: ${AUDIT_ROWS.toLocaleString('en-US')} rows inserted in one transaction (${seconds(committedAt - insertStart)}); ` +
            `all ${rows.toLocaleString('en-US')} rows of the tenant in a checkpoint ${seconds(catchUpMs)} after its commit ` +
            `(${Math.round(AUDIT_ROWS / (catchUpMs / 1000)).toLocaleString('en-US')} rows/s)\n`
        : `checkpointer: ${caught.treeSize.toLocaleString('en-US')} of ${rows.toLocaleString('en-US')} rows in a checkpoint ${seconds(catchUpMs)} ` +
            'after the commit: gave up; proofs not measured\n',
    );
    if (!caught.caughtUp) return;
    // A log that large in steady state, as the tokens part has it: autovacuum has long since processed
    // the bulk insert and the checkpointer's million leaves (left to itself, it would run during the
    // measurements below and weigh on their tails).
    await sql(databaseUrl, 'VACUUM ANALYZE');

    const ids = (
      await db.query<{ id: string }>(
        `SELECT id FROM audit_logs WHERE tenant_id = $1 ORDER BY random() LIMIT ${PROOF_IDS}`,
        [tenantId],
      )
    ).rows.map((row) => row.id);
    const headers = { 'BT-API-KEY': managementKey };
    await beforeLoad?.();
    // One proof by hand first, so that a service answering something else says what.
    await api(base, managementKey, 'GET', `/logs/${ids[0]}/proof`);
    process.stdout.write(
      `GET /logs/{id}/proof, ${ids.length.toLocaleString('en-US')} rows picked at random\n`,
    );
    const proof = await load({
      url: `${base}/logs/${ids[0]}/proof`,
      method: 'GET',
      headers,
      paths: ids.map((id) => `/logs/${id}/proof`),
    });
    // The same with one connection: a proof's own latency, without nine others queued on the CPUs.
    const alone = await runLoad({
      url: `${base}/logs/${ids[0]}/proof`,
      method: 'GET',
      headers,
      paths: ids.map((id) => `/logs/${id}/proof`),
      connections: 1,
      duration: DURATION,
    });
    // Issue 44's target: a p99 under 50 ms at 10 connections (issue 32's, 20 ms, is met by one alone).
    const met = (r: LoadResult, ms: number) => `p99 < ${ms} ms: ${r.p99 < ms ? 'met' : 'missed'}`;
    const results: [string, LoadResult, string][] = [
      [`GET /logs/{id}/proof (random rows, ${CONNECTIONS} connections)`, proof, met(proof, 50)],
      ['GET /logs/{id}/proof (random rows, 1 connection)', alone, met(alone, 20)],
    ];
    const second = caught.treeSize;
    if (first !== undefined && first < second) {
      const path = `/logs/consistency?first=${first}&second=${second}`;
      await api(base, managementKey, 'GET', path);
      process.stdout.write(`GET ${path}\n`);
      results.push([`GET ${path}`, await load({ url: `${base}${path}`, method: 'GET', headers }), '']);
    }
    process.stdout.write(
      `\n| scenario (${rows.toLocaleString('en-US')} audit rows) | req/s | p50 ms | p99 ms | non-2xx | target |\n|---|---|---|---|---|---|\n`,
    );
    for (const [name, r, target] of results)
      process.stdout.write(
        `| ${name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.non2xx + r.errors} | ${target} |\n`,
      );
  } finally {
    await db.end();
  }
}

if (require.main === module)
  main().catch((error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  });
