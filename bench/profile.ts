/**
 * `npm run bench:profile`: a CPU profile of the built service under a tokenize load (node --cpu-prof),
 * summarised as the functions with the most self time, grouped by package.
 *
 *   BENCH_SCENARIO=tokenize-1|tokenize-100|get-token (default tokenize-1)
 *   BENCH_PROFILE_OUT=<file> keeps the .cpuprofile (Chrome DevTools or speedscope open it)
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { serviceEnv } from './support';

const ROOT = join(__dirname, '..');
const ADMIN_URL = process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const PORT = 4300;
const SCENARIO = process.env.BENCH_SCENARIO ?? 'tokenize-1';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
}

export function summarise(file: string): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
  const total = profile.samples.length;
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  for (const node of profile.nodes) {
    if (!node.hitCount) continue;
    const url = node.callFrame.url;
    const pkg = url.includes('node_modules/')
      ? url
          .split('node_modules/')
          .pop()!
          .split('/')
          .slice(0, url.includes('node_modules/@') ? 2 : 1)
          .join('/')
      : url.includes('/dist/')
        ? 'service (dist)'
        : url.startsWith('node:') || !url
          ? `node internals${node.callFrame.functionName.startsWith('(') ? ` ${node.callFrame.functionName}` : ''}`
          : url;
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + node.hitCount);
    const name = `${node.callFrame.functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${node.callFrame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + node.hitCount);
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  process.stdout.write(
    `\nself time by package (${total} samples):\n${top(byPackage, 15)}\n\ntop functions by self time:\n${top(byFunction, 25)}\n`,
  );
}

async function main(): Promise<void> {
  execFileSync('npx', ['nest', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const dbName = `vault_profile_${Date.now()}`;
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${dbName}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  const profileDir = mkdtempSync(join(tmpdir(), 'vault-profile-'));
  try {
    let output = '';
    const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, 'dist/main.js'], {
      cwd: ROOT,
      env: serviceEnv(url.toString(), PORT),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (c: Buffer) => (output += c.toString().slice(0, 10_000)));
    const base = `http://127.0.0.1:${PORT}`;
    for (let i = 0; i < 200; i++) {
      if (
        await fetch(`${base}/health/ready`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const managementKey = /(key_mgt_[0-9A-Za-z]+)/.exec(output)![1];
    const app = (await (
      await fetch(`${base}/applications`, {
        method: 'POST',
        headers: { 'BT-API-KEY': managementKey, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'p', type: 'private', permissions: ['token:create', 'token:read'] }),
      })
    ).json()) as { key: string };
    const card = (i: number) => ({
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 1 + (i % 12), expiration_year: 2031 },
    });
    const headers = { 'BT-API-KEY': app.key, 'Content-Type': 'application/json' };
    const token = (await (
      await fetch(`${base}/tokenize`, { method: 'POST', headers, body: JSON.stringify(card(0)) })
    ).json()) as { id: string };
    const scenario =
      SCENARIO === 'get-token'
        ? { url: `${base}/tokens/${token.id}`, method: 'GET', headers }
        : {
            url: `${base}/tokenize`,
            method: 'POST',
            headers,
            // Distinct cards with CVCs, built per request (bench/load.ts), as `npm run bench` sends.
            bodyKind: { cards: SCENARIO === 'tokenize-100' ? 100 : 1 },
          };
    const result = execFileSync(
      process.execPath,
      [
        join(ROOT, 'node_modules/ts-node/dist/bin.js'),
        '--transpile-only',
        join(ROOT, 'bench/load.ts'),
        JSON.stringify({ ...scenario, connections: 10, duration: Number(process.env.BENCH_DURATION ?? 10) }),
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    process.stdout.write(`${SCENARIO}: ${result}\n`);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('no profile written');
    summarise(join(profileDir, file));
    if (process.env.BENCH_PROFILE_OUT) copyFileSync(join(profileDir, file), process.env.BENCH_PROFILE_OUT);
    if (process.env.BENCH_KEEP_PROFILE)
      execFileSync('cp', [join(profileDir, file), process.env.BENCH_KEEP_PROFILE]);
  } finally {
    rmSync(profileDir, { recursive: true, force: true });
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    await admin.end();
  }
}

if (require.main === module)
  main().catch((error: unknown) => {
    process.stderr.write(`${String(error instanceof Error ? error.stack : error)}\n`);
    process.exit(1);
  });
