/**
 * The card import scenario of `npm run bench` (`BENCH_ONLY=import`): the built service on a database of
 * its own imports a file of BENCH_IMPORT_CARDS (default 200,000) distinct cards, a CSV file encrypted to
 * the tenant's import key (docs/migration.md). Reports cards/s (from the job's start to its end, the
 * integrity pass included), the CPU the server and PostgreSQL spent per card, and the server's peak
 * growth of resident memory.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  createReadStream,
  createWriteStream,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { cardNumber, encryptFileTo } from '../test/support/card-files';
import { api, serviceEnv } from './support';

const ROOT = join(__dirname, '..');
const PORT = 4210;

export interface ImportMeasure {
  cards: number;
  seconds: number;
  cardsPerSecond: number;
  serverCpuUsPerCard: number;
  postgresCpuUsPerCard: number;
  rssGrowthMiB: number;
}

/** utime + stime of a process, in ms (ticks of 10 ms). */
const cpuOf = (pid: number | string): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

const rssOf = (pid: number): number =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

/** The CPU every PostgreSQL process on this machine has used, in ms. */
function postgresCpu(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/stat`, 'utf8').includes('(postgres)')) total += cpuOf(pid);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

async function writeCards(path: string, count: number): Promise<void> {
  const out = createWriteStream(path);
  out.write('number,expiration_month,expiration_year,external_id\n');
  for (let i = 0; i < count; i++)
    if (!out.write(`${cardNumber(i, '46000')},${(i % 12) + 1},2034,bench-${i}\n`)) await once(out, 'drain');
  out.end();
  await once(out, 'finish');
}

function upload(key: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: PORT,
        method: 'POST',
        path: '/tokens/imports?format=csv',
        headers: {
          'BT-API-KEY': key,
          'Content-Type': 'application/pgp-encrypted',
          'Content-Length': statSync(path).size,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () =>
          res.statusCode === 202 ? resolve(JSON.parse(text).id as string) : reject(new Error(text)),
        );
      },
    );
    req.on('error', reject);
    createReadStream(path).pipe(req);
  });
}

export async function benchImport(adminUrl: string, cards: number): Promise<ImportMeasure> {
  const name = `vault_bench_import_${Date.now()}`;
  const adminClient = new Client({ connectionString: adminUrl });
  await adminClient.connect();
  await adminClient.query(`CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const dir = mkdtempSync(join(tmpdir(), 'bench-import-'));
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: { ...serviceEnv(url.toString(), PORT), LOG_LEVEL: 'warn', IMPORT_DIR: join(dir, 'uploads') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const base = `http://127.0.0.1:${PORT}`;
  try {
    for (let i = 0; ; i++) {
      const ready = await fetch(`${base}/health/ready`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      if (i > 300) throw new Error(`the service did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const key = /(key_mgt_[0-9A-Za-z]+)/.exec(output)![1];
    const { public_key: publicKey } = await api(base, key, 'GET', '/tokens/imports/key');
    await writeCards(join(dir, 'cards.csv'), cards);
    await encryptFileTo(publicKey as string, join(dir, 'cards.csv'), join(dir, 'cards.csv.gpg'), 'cards.csv');
    rmSync(join(dir, 'cards.csv'));
    const pid = child.pid!;
    const baseline = rssOf(pid);
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid) - baseline)), 100);
    const [serverBefore, postgresBefore, started] = [cpuOf(pid), postgresCpu(), Date.now()];
    const id = await upload(key, join(dir, 'cards.csv.gpg'));
    for (;;) {
      const job = await api(base, key, 'GET', `/tokens/imports/${id}`);
      if (job.status === 'failed') throw new Error(`the import failed: ${JSON.stringify(job)}`);
      if (job.status === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seconds = (Date.now() - started) / 1000;
    clearInterval(sampler);
    return {
      cards,
      seconds,
      cardsPerSecond: cards / seconds,
      serverCpuUsPerCard: ((cpuOf(pid) - serverBefore) * 1000) / cards,
      postgresCpuUsPerCard: ((postgresCpu() - postgresBefore) * 1000) / cards,
      rssGrowthMiB: peak / 2 ** 20,
    };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    rmSync(dir, { recursive: true, force: true });
    await adminClient.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await adminClient.end();
  }
}
