/**
 * `npm run bench:vault`: what a large vault and a heavy load cost (issue 21's last two targets).
 *
 * 1. Builds, creates a database, starts the built service on it (as `npm run bench` does) and makes one
 *    card token with a search index.
 * 2. Measures, on the nearly empty vault: `GET /tokens/{id}`, search by fingerprint, search by index
 *    (`data:`), and tokenize with `deduplicate_token` (the same card again).
 * 3. Inserts 1,000,000 tokens (and as many search index rows) for the same tenant with SQL, VACUUMs,
 *    and measures the same four again: the p99 ratios are the target (at most 1.3x).
 * 4. Samples the service's resident memory (VmRSS) idle, during a tokenize-100 load, and 10 s after it.
 *
 * BENCH_DURATION and BENCH_CONNECTIONS tune the load as for `npm run bench`.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import type { LoadResult, LoadScenario } from './load';
import { api, serviceEnv } from './support';

const ROOT = join(__dirname, '..');
const ADMIN_URL = process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const PORT = 4210;
const VAULT = 1_000_000;
const DB = `vault_bench_large_${process.pid}`;

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
function load(scenario: Omit<LoadScenario, 'connections' | 'duration'>): Promise<LoadResult> {
  const full: LoadScenario = { ...scenario, connections: CONNECTIONS, duration: DURATION };
  return new Promise((resolve, reject) => {
    let out = '';
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'node_modules/ts-node/dist/bin.js'),
        '--transpile-only',
        join(ROOT, 'bench/load.ts'),
        JSON.stringify(full),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`load exited ${code}`)),
    );
  });
}

const rssMb = (child: ChildProcess): number => {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
};

const BASE = `http://127.0.0.1:${PORT}`;

async function main(): Promise<void> {
  execFileSync('npx', ['nest', 'build'], { cwd: ROOT, stdio: 'inherit' });
  await sql(ADMIN_URL, `CREATE DATABASE ${DB}`);
  let output = '';
  const server = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: serviceEnv(dbUrl(DB), PORT),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout.on('data', (chunk: Buffer) => output.length < 100_000 && (output += chunk.toString()));
  server.stderr.on('data', (chunk: Buffer) => output.length < 100_000 && (output += chunk.toString()));
  try {
    for (let i = 0; i < 300; i++) {
      try {
        if ((await fetch(`http://127.0.0.1:${PORT}/health/ready`)).ok) break;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
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
    const cardBody = {
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 1, expiration_year: 2031 },
      search_indexes: ['{{ data.number | last4 }}'],
    };
    const token = await api(BASE, key, 'POST', '/tokens', cardBody);
    const auth = { 'Content-Type': 'application/json', 'BT-API-KEY': key };
    const scenarios: [string, Omit<LoadScenario, 'connections' | 'duration'>][] = [
      [
        'GET /tokens/{id}',
        { url: `http://127.0.0.1:${PORT}/tokens/${token.id}`, method: 'GET', headers: auth },
      ],
      [
        'search by fingerprint',
        {
          url: `http://127.0.0.1:${PORT}/v2/tokens/search`,
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ query: `fingerprint:${token.fingerprint}`, size: 10 }),
        },
      ],
      [
        'search by index (data:)',
        {
          url: `http://127.0.0.1:${PORT}/v2/tokens/search`,
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ query: 'data:4242', size: 10 }),
        },
      ],
      [
        'tokenize with deduplicate_token',
        {
          url: `http://127.0.0.1:${PORT}/tokens`,
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

    process.stdout.write('memory under a tokenize-100 load...\n');
    const hundred = JSON.stringify(
      Array.from({ length: 100 }, (_, i) => ({
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 1 + (i % 12), expiration_year: 2031 },
      })),
    );
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const idle = rssMb(server);
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(server))), 200);
    const loaded = await load({
      url: `http://127.0.0.1:${PORT}/tokenize`,
      method: 'POST',
      headers: auth,
      body: hundred,
    });
    clearInterval(sampler);
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const after = rssMb(server);

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
    process.stdout.write(
      `\nresident memory: idle ${idle.toFixed(0)} MB, peak under tokenize-100 (${Math.round(loaded.rps)} req/s) ${peak.toFixed(0)} MB (target < 300), ` +
        `10 s after ${after.toFixed(0)} MB (${((after / idle - 1) * 100).toFixed(0)}% over idle; target within 20%)\n`,
    );
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
