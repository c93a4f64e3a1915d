import {
  createReadStream,
  createWriteStream,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { Client } from 'pg';
import { cardNumber, encryptFileTo } from './support/card-files';
import { freePort, spawnJs, Spawned, stop, waitForReady } from './support/processes';
import { createDatabase, dropDatabase } from './support/test-database';
import { waitFor } from './support/wait';

/**
 * A large import against the service run as a process of its own (docs/migration.md): a file of
 * IMPORT_LARGE_CARDS (default 1,000,000) distinct cards, written to disk and encrypted as streams, uploaded
 * as a stream; the server's resident memory sampled all along must grow by less than 200 MiB; the server
 * is killed (SIGKILL) mid-job and started again, and the job goes on from its checkpoint: every line
 * imported exactly once (tokens = distinct numbers = lines). Prints the cards per second measured.
 */
const CARDS = Number(process.env.IMPORT_LARGE_CARDS ?? 1_000_000);
const KEY_LINE = /^\s+(key_mgt_[0-9A-Za-z]+)$/m;
const MiB = 1024 * 1024;

/** The resident set of a process, from /proc (Linux), in bytes. */
const rssOf = (pid: number): number =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

async function writeCards(path: string, count: number): Promise<void> {
  const out = createWriteStream(path);
  out.write('number,expiration_month,expiration_year,external_id\n');
  for (let i = 0; i < count; i++) {
    if (!out.write(`${cardNumber(i, '45000')},${(i % 12) + 1},2034,card-${i}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** POSTs the file as a stream; the answer's status and body. */
function upload(port: number, key: string, path: string): Promise<{ status: number; body: { id: string } }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/tokens/imports?format=csv',
        headers: {
          'BT-API-KEY': key,
          'Content-Type': 'application/octet-stream',
          'Content-Length': statSync(path).size,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    createReadStream(path).pipe(req);
  });
}

interface Job {
  status: string;
  total: number | null;
  imported: number;
  duplicates: number;
  failed: number;
}

describe('a large card import', () => {
  const dir = mkdtempSync(join(tmpdir(), 'imports-large-'));
  let db: { name: string; url: string };
  let server: Spawned | undefined;
  let port = 0;
  let key = '';

  const start = async (bootstrap: boolean) => {
    port = await freePort();
    server = spawnJs('dist/main.js', [], {
      DATABASE_URL: db.url,
      PORT: String(port),
      BOOTSTRAP: String(bootstrap),
      LOG_LEVEL: 'warn',
      IMPORT_DIR: join(dir, 'uploads'),
    });
    await waitForReady(port, 90_000);
  };
  const job = async (id: string): Promise<Job> =>
    (
      await fetch(`http://127.0.0.1:${port}/tokens/imports/${id}`, { headers: { 'BT-API-KEY': key } })
    ).json() as Promise<Job>;

  beforeAll(async () => {
    db = await createDatabase('vault_test_imports_large');
  });
  afterAll(async () => {
    if (server) await stop(server);
    await dropDatabase(db.name);
    rmSync(dir, { recursive: true, force: true });
  });

  it(`imports ${CARDS} cards within 200 MiB of memory, through a kill -9, each line once`, async () => {
    await start(true);
    key = KEY_LINE.exec(server!.stdout())![1];
    const served = (await (
      await fetch(`http://127.0.0.1:${port}/tokens/imports/key`, { headers: { 'BT-API-KEY': key } })
    ).json()) as { public_key: string };
    await writeCards(join(dir, 'cards.csv'), CARDS);
    await encryptFileTo(served.public_key, join(dir, 'cards.csv'), join(dir, 'cards.csv.gpg'), 'cards.csv');
    rmSync(join(dir, 'cards.csv'));

    // The server's resident memory, sampled every 100 ms from before the upload to the job's end.
    let pid = server!.child.pid!;
    let baseline = rssOf(pid);
    let peak = 0;
    const trace: number[] = [];
    let samples = 0;
    const sampler = setInterval(() => {
      try {
        const growth = rssOf(pid) - baseline;
        peak = Math.max(peak, growth);
        if (samples++ % 50 === 0) trace.push(Math.round(growth / MiB));
      } catch {
        // the process is gone (killed on purpose)
      }
    }, 100);
    try {
      const created = await upload(port, key, join(dir, 'cards.csv.gpg'));
      expect(created.status).toBe(202);
      const id = created.body.id;

      // Killed once about a third is in: the batch under way is lost, the ones before it stay.
      const first = Date.now();
      const before = await waitFor(
        async () => {
          const state = await job(id);
          return state.imported >= CARDS / 3 && state;
        },
        { timeoutMs: 600_000, intervalMs: 200, what: 'a third of the cards' },
      );
      const firstRate = before.imported / ((Date.now() - first) / 1000);
      server!.child.kill('SIGKILL');
      await server!.exited;

      await start(false);
      pid = server!.child.pid!;
      baseline = rssOf(pid);
      const resumedAt = Date.now();
      const resumedFrom = (await job(id)).imported;
      const done = await waitFor(
        async () => {
          const state = await job(id);
          return ['completed', 'failed'].includes(state.status) && state;
        },
        { timeoutMs: 900_000, intervalMs: 250, what: 'the import to end' },
      );
      const secondRate = (done.imported - resumedFrom) / ((Date.now() - resumedAt) / 1000);
      console.log(
        `imports-large: ${CARDS} cards; ${Math.round(firstRate)} cards/s before the kill, ` +
          `${Math.round(secondRate)} cards/s after the restart; peak RSS growth ${Math.round(peak / MiB)} MiB ` +
          `(every 5 s: ${trace.join(' ')})`,
      );
      expect(done).toMatchObject({
        status: 'completed',
        total: CARDS,
        imported: CARDS,
        duplicates: 0,
        failed: 0,
      });
      expect(peak).toBeLessThan(200 * MiB);

      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        const [{ tokens, numbers }] = (
          await client.query(
            `SELECT count(*)::int AS tokens, count(DISTINCT fingerprint)::int AS numbers FROM tokens WHERE type = 'card'`,
          )
        ).rows;
        expect({ tokens, numbers }).toEqual({ tokens: CARDS, numbers: CARDS });
        const [{ lines, different }] = (
          await client.query(
            `SELECT count(*)::int AS lines, count(DISTINCT line)::int AS different FROM token_import_results
              WHERE import_id = $1 AND status = 'imported'`,
            [id],
          )
        ).rows;
        expect({ lines, different }).toEqual({ lines: CARDS, different: CARDS });
        expect(readdirSync(join(dir, 'uploads'))).toEqual([]);
      } finally {
        await client.end();
      }
    } catch (error) {
      console.log(server?.stdout().slice(-3000), server?.stderr().slice(-3000));
      throw error;
    } finally {
      clearInterval(sampler);
    }
  }, 1_800_000);
});
