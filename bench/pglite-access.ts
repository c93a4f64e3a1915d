/**
 * How should the service reach its embedded PGlite database? Measures three set-ups through a TypeORM DataSource:
 *
 *   A        PGlite behind PGLiteSocketServer on a Unix socket (maxConnections 1), TypeORM `postgres` driver over
 *            `pg` with a pool of exactly one connection (what src/database/embedded-postgres.ts does today).
 *   B-nolock typeorm-pglite driver, as shipped: every "connection" is the same PGlite instance, nothing serializes
 *            transactions.
 *   B-lock   typeorm-pglite driver with a promise-chain mutex around each `dataSource.transaction` and each
 *            non-transactional `dataSource.query` (the smallest wrapper that keeps the benchmark's transactions whole).
 *
 * Each candidate runs in its own child process on a fresh data dir under os.tmpdir() that is removed afterwards.
 *
 *   npx ts-node --transpile-only bench/pglite-access.ts              # all candidates, one child process each
 *   npx ts-node --transpile-only bench/pglite-access.ts --mode A     # one candidate, prints tables for it only
 */
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DataSource, EntityManager } from 'typeorm';
import { PGliteDriver } from 'typeorm-pglite';
import { EmbeddedPostgres } from '../src/database/embedded-postgres';

const MODES = ['A', 'B-nolock', 'B-lock'] as const;
type Mode = (typeof MODES)[number];

const SEQ_SELECTS = 2000;
const SEQ_TX = 500;
const CONC_TX = 500;
const CONCURRENCY = 20;
const BULK_ROWS = 100;
const BULK_REPEAT = 100;
const WARMUP_SELECTS = 100;
const WARMUP_TX = 20;

// ---------------------------------------------------------------------------------------------------------------
// Access layer: the same three operations for every candidate.
// ---------------------------------------------------------------------------------------------------------------

interface Db {
  tx<T>(fn: (m: EntityManager) => Promise<T>): Promise<T>;
  query<T = unknown>(sql: string, params?: unknown[]): Promise<T>;
  close(): Promise<void>;
}

/** FIFO mutex as a promise chain: each run starts after the previous one settled. */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

async function open(mode: Mode, dir: string): Promise<Db> {
  if (mode === 'A') {
    const embedded = await EmbeddedPostgres.start(dir);
    const ds = new DataSource({
      type: 'postgres',
      host: embedded.host,
      port: embedded.port,
      username: 'postgres',
      database: 'postgres',
      entities: [],
      synchronize: false,
      logging: false,
      extra: { max: 1 },
    });
    try {
      await ds.initialize();
    } catch (error) {
      await embedded.stop();
      throw error;
    }
    return {
      tx: (fn) => ds.transaction(fn),
      query: (sql, params) => ds.query(sql, params),
      close: async () => {
        await ds.destroy();
        await embedded.stop();
      },
    };
  }

  const ds = new DataSource({
    type: 'postgres',
    driver: new PGliteDriver({ dataDir: join(dir, 'pgdata') }).driver,
    entities: [],
    synchronize: false,
    logging: false,
  });
  await ds.initialize();
  const close = () => ds.destroy();
  if (mode === 'B-nolock') {
    return { tx: (fn) => ds.transaction(fn), query: (sql, params) => ds.query(sql, params), close };
  }
  const lock = new Mutex();
  return {
    tx: (fn) => lock.run(() => ds.transaction(fn)),
    query: (sql, params) => lock.run(() => ds.query(sql, params)),
    close: () => lock.run(close),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------------------------------

const TENANT = randomUUID();
const payload = () => randomBytes(150).toString('hex'); // 300 characters

function pct(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

interface Lat {
  perSec: number;
  p50: number;
  p99: number;
}

function summarize(latencies: number[], count: number, totalMs: number): Lat {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { perSec: (count * 1000) / totalMs, p50: pct(sorted, 0.5), p99: pct(sorted, 0.99) };
}

/** One benchmark transaction: INSERT a ~300-byte row, SELECT it back by primary key, COMMIT. Returns the xid. */
async function insertAndRead(db: Db): Promise<string> {
  const id = randomUUID();
  const body = payload();
  return db.tx(async (m) => {
    await m.query('INSERT INTO t (id, tenant_id, payload) VALUES ($1, $2, $3)', [id, TENANT, body]);
    // txid_current() rides along on the primary-key read to show whether each transaction got its own backend
    // transaction (the INSERT already assigned the xid, so it costs nothing extra).
    const rows: { payload: string; xid: string }[] = await m.query(
      'SELECT payload, txid_current()::text AS xid FROM t WHERE id = $1',
      [id],
    );
    if (rows.length !== 1 || rows[0].payload !== body) throw new Error(`read-back mismatch for ${id}`);
    return rows[0].xid;
  });
}

async function rowCount(db: Db): Promise<number> {
  const rows: { n: number }[] = await db.query<{ n: number }[]>('SELECT count(*)::int AS n FROM t');
  return rows[0].n;
}

class Rollback extends Error {}

interface Interleave {
  trial: string;
  t2Saw: number;
  t1RowAfterRollback: number;
  t2RowAfterCommit?: number;
  maxLoopStallMs: number;
  errors?: string;
}

/**
 * T1 inserts a row, sleeps in the database with pg_sleep(0.2) (optionally followed by a few more statements) and rolls
 * back. T2 is issued as soon as T1's INSERT has returned and counts that row (as a transaction, or as a plain query);
 * with `t2Writes` it also inserts and commits a row of its own. On a correct set-up T2 sees 0, T1's row is gone
 * afterwards and T2's row is there. A timer measures how long the event loop was blocked meanwhile.
 */
async function interleave(
  db: Db,
  trial: string,
  opts: { t2: 'transaction' | 'plain query'; t1ExtraStatements?: number; t2Writes?: boolean },
): Promise<Interleave> {
  const id1 = randomUUID();
  const id2 = randomUUID();
  let signal!: () => void;
  const inserted = new Promise<void>((resolve) => (signal = resolve));
  let last = performance.now();
  let maxLoopStallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxLoopStallMs = Math.max(maxLoopStallMs, now - last);
    last = now;
  }, 5);
  const insert = 'INSERT INTO t (id, tenant_id, payload) VALUES ($1, $2, $3)';
  const countSql = 'SELECT count(*)::int AS n FROM t WHERE id = $1';
  const t1 = db
    .tx(async (m) => {
      await m.query(insert, [id1, TENANT, 'uncommitted']);
      signal();
      await m.query('SELECT pg_sleep(0.2)');
      for (let i = 0; i < (opts.t1ExtraStatements ?? 0); i++) await m.query('SELECT 1');
      throw new Rollback();
    })
    .then(
      () => 'T1 committed unexpectedly',
      (e: unknown) => (e instanceof Rollback ? undefined : `T1: ${String(e)}`),
    );
  const t2 = inserted
    .then(() =>
      opts.t2 === 'transaction'
        ? db.tx(async (m) => {
            const rows: { n: number }[] = await m.query(countSql, [id1]);
            if (opts.t2Writes) await m.query(insert, [id2, TENANT, 'T2']);
            return rows[0].n;
          })
        : db.query<{ n: number }[]>(countSql, [id1]).then((r) => r[0].n),
    )
    .then(
      (n) => ({ n, error: undefined as string | undefined }),
      (e: unknown) => ({ n: -1, error: `T2: ${String(e)}` }),
    );
  const [t1Error, t2Result] = await Promise.all([t1, t2]);
  clearInterval(timer);
  // If the whole trial ran as one chain of microtasks the timer never fired: that is one stall from start to end.
  maxLoopStallMs = Math.max(maxLoopStallMs, performance.now() - last);
  const count = async (id: string) => (await db.query<{ n: number }[]>(countSql, [id]))[0].n;
  const result: Interleave = {
    trial,
    t2Saw: t2Result.n,
    t1RowAfterRollback: await count(id1),
    t2RowAfterCommit: opts.t2Writes ? await count(id2) : undefined,
    maxLoopStallMs,
    errors: [t1Error, t2Result.error].filter(Boolean).join('; ') || undefined,
  };
  // Leave the table as it was, whatever happened, so that row counts of later runs stay exact.
  await db.query('DELETE FROM t WHERE id = $1 OR id = $2', [id1, id2]);
  return result;
}

interface Result {
  mode: Mode;
  coldStartMs: number;
  warmStartMs: number;
  select: Lat;
  seqTx: Lat & { distinctXids: number };
  concTx: Lat & {
    errors: number;
    firstError?: string;
    distinctXids: number;
    countOk: boolean;
    count: number;
    expected: number;
  };
  bulk: { rowsPerSec: number; p50: number; p99: number; countOk: boolean };
  interleave: Interleave[];
  maxRssMb: number;
}

const log = (msg: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${msg}\n`);

async function runMode(mode: Mode): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), 'pglite-bench-'));
  try {
    // Cold start: fresh data dir (includes initdb) until the first query has answered.
    let t0 = performance.now();
    let db = await open(mode, dir);
    await db.query('SELECT 1');
    const coldStartMs = performance.now() - t0;
    await db.query(
      'CREATE TABLE t (id uuid PRIMARY KEY, tenant_id uuid, payload text, created_at timestamptz DEFAULT now())',
    );
    await db.close();

    // Warm start: the same data dir again, as on a service restart.
    t0 = performance.now();
    db = await open(mode, dir);
    await db.query('SELECT 1');
    const warmStartMs = performance.now() - t0;
    log(`${mode}: cold start ${coldStartMs.toFixed(0)} ms, warm start ${warmStartMs.toFixed(0)} ms`);

    try {
      let expected = 0;
      for (let i = 0; i < WARMUP_SELECTS; i++) await db.query('SELECT 1');
      for (let i = 0; i < WARMUP_TX; i++) await insertAndRead(db);
      expected += WARMUP_TX;

      // 1. sequential SELECT 1
      let lat: number[] = [];
      let start = performance.now();
      for (let i = 0; i < SEQ_SELECTS; i++) {
        const s = performance.now();
        await db.query('SELECT 1');
        lat.push(performance.now() - s);
      }
      const select = summarize(lat, SEQ_SELECTS, performance.now() - start);
      log(`${mode}: select done`);

      // 2. sequential transactions
      lat = [];
      let xids = new Set<string>();
      start = performance.now();
      for (let i = 0; i < SEQ_TX; i++) {
        const s = performance.now();
        xids.add(await insertAndRead(db));
        lat.push(performance.now() - s);
      }
      const seqTx = { ...summarize(lat, SEQ_TX, performance.now() - start), distinctXids: xids.size };
      expected += SEQ_TX;
      log(`${mode}: sequential transactions done`);

      // 3. concurrent transactions: CONCURRENCY workers keep that many transactions in flight until CONC_TX are done.
      lat = [];
      xids = new Set<string>();
      let errors = 0;
      let firstError: string | undefined;
      let next = 0;
      start = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < CONC_TX) {
            next++;
            const s = performance.now();
            try {
              xids.add(await insertAndRead(db));
            } catch (e) {
              errors++;
              firstError ??= String(e);
            }
            lat.push(performance.now() - s);
          }
        }),
      );
      const concLat = summarize(lat, CONC_TX, performance.now() - start);
      expected += CONC_TX;
      const count = await rowCount(db);
      const concTx = {
        ...concLat,
        errors,
        firstError,
        distinctXids: xids.size,
        countOk: count === expected,
        count,
        expected,
      };
      log(`${mode}: concurrent transactions done (errors ${errors}, rows ${count}/${expected})`);

      // 4. multi-row INSERT of BULK_ROWS rows in one transaction, BULK_REPEAT times
      const values = Array.from(
        { length: BULK_ROWS },
        (_, i) => `($${i * 3 + 1}::uuid, $${i * 3 + 2}::uuid, $${i * 3 + 3})`,
      ).join(', ');
      const bulkSql = `INSERT INTO t (id, tenant_id, payload) VALUES ${values}`;
      lat = [];
      start = performance.now();
      for (let r = 0; r < BULK_REPEAT; r++) {
        const params = Array.from({ length: BULK_ROWS }, () => [randomUUID(), TENANT, payload()]).flat();
        const s = performance.now();
        await db.tx((m) => m.query(bulkSql, params));
        lat.push(performance.now() - s);
      }
      const bulkLat = summarize(lat, BULK_REPEAT, performance.now() - start);
      expected += BULK_ROWS * BULK_REPEAT;
      const bulk = {
        rowsPerSec: bulkLat.perSec * BULK_ROWS,
        p50: bulkLat.p50,
        p99: bulkLat.p99,
        countOk: (await rowCount(db)) === expected,
      };
      log(`${mode}: bulk insert done`);

      // 5. interleaving check
      const inter = [
        await interleave(db, 'T1: INSERT, pg_sleep, ROLLBACK; T2: tx counting', { t2: 'transaction' }),
        await interleave(db, 'T1: INSERT, pg_sleep, ROLLBACK; T2: plain query counting', {
          t2: 'plain query',
        }),
        await interleave(db, 'T1: INSERT, pg_sleep, 3 x SELECT 1, ROLLBACK; T2: tx counting + INSERT', {
          t2: 'transaction',
          t1ExtraStatements: 3,
          t2Writes: true,
        }),
      ];
      log(`${mode}: interleave check done`);

      return {
        mode,
        coldStartMs,
        warmStartMs,
        select,
        seqTx,
        concTx,
        bulk,
        interleave: inter,
        maxRssMb: process.resourceUsage().maxRSS / 1024,
      };
    } finally {
      await db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------------------------

function printTables(results: Result[]): void {
  const f0 = (n: number) => n.toFixed(0);
  const f2 = (n: number) => n.toFixed(2);
  const rows: [string, (r: Result) => string][] = [
    ['startup, fresh dir (initdb) to first query, ms', (r) => f0(r.coldStartMs)],
    ['startup, existing dir to first query, ms', (r) => f0(r.warmStartMs)],
    [`${SEQ_SELECTS} sequential SELECT 1, ops/s`, (r) => f0(r.select.perSec)],
    ['  p50 / p99 ms', (r) => `${f2(r.select.p50)} / ${f2(r.select.p99)}`],
    [`${SEQ_TX} sequential tx (INSERT+SELECT), tx/s`, (r) => f0(r.seqTx.perSec)],
    ['  p50 / p99 ms', (r) => `${f2(r.seqTx.p50)} / ${f2(r.seqTx.p99)}`],
    ['  distinct xids', (r) => `${r.seqTx.distinctXids}/${SEQ_TX}`],
    [`${CONC_TX} tx, ${CONCURRENCY} in flight, tx/s`, (r) => f0(r.concTx.perSec)],
    ['  p99 ms (incl. queueing)', (r) => f2(r.concTx.p99)],
    ['  errors', (r) => String(r.concTx.errors)],
    [
      '  final row count',
      (r) => `${r.concTx.count}/${r.concTx.expected} ${r.concTx.countOk ? 'ok' : 'WRONG'}`,
    ],
    ['  distinct xids', (r) => `${r.concTx.distinctXids}/${CONC_TX}`],
    [`${BULK_REPEAT} x tx with ${BULK_ROWS}-row INSERT, rows/s`, (r) => f0(r.bulk.rowsPerSec)],
    ['  p50 / p99 ms per tx', (r) => `${f2(r.bulk.p50)} / ${f2(r.bulk.p99)}`],
    ['  final row count', (r) => (r.bulk.countOk ? 'ok' : 'WRONG')],
    ...[0, 1, 2].flatMap((i): [string, (r: Result) => string][] => [
      [`interleave ${i + 1}: T2 saw T1's uncommitted row`, (r) => yesNo(r.interleave[i].t2Saw)],
      ["  T1's row present after T1's rollback", (r) => yesNo(r.interleave[i].t1RowAfterRollback)],
      ...(i === 2
        ? ([
            ["  T2's row present after T2's commit", (r) => yesNo(r.interleave[i].t2RowAfterCommit ?? -1)],
          ] as [string, (r: Result) => string][])
        : []),
    ]),
    ['longest event-loop stall during pg_sleep(0.2), ms', (r) => f0(r.interleave[0].maxLoopStallMs)],
    ['peak RSS of the process, MB', (r) => f0(r.maxRssMb)],
  ];
  const header = ['metric', ...results.map((r) => r.mode)];
  const table = [header, ...rows.map(([label, fn]) => [label, ...results.map(fn)])];
  const widths = header.map((_, c) => Math.max(...table.map((row) => row[c].length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w, c) => (c === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const row of table.slice(1)) console.log(line(row));
  for (const r of results) {
    if (r.concTx.firstError) console.log(`${r.mode}: first concurrent error: ${r.concTx.firstError}`);
    for (const i of r.interleave) if (i.errors) console.log(`${r.mode}: ${i.trial}: ${i.errors}`);
  }
}

function yesNo(n: number): string {
  return n < 0 ? 'error' : n > 0 ? 'YES' : 'no';
}

async function main(): Promise<void> {
  const modeArg = process.argv.indexOf('--mode');
  if (modeArg > 0) {
    const mode = process.argv[modeArg + 1] as Mode;
    if (!MODES.includes(mode)) throw new Error(`--mode must be one of ${MODES.join(', ')}`);
    const result = await runMode(mode);
    if (process.argv.includes('--json')) console.log(`RESULT ${JSON.stringify(result)}`);
    else printTables([result]);
    return;
  }

  const results: Result[] = [];
  for (const mode of MODES) {
    const child = spawnSync(
      process.execPath,
      [require.resolve('ts-node/dist/bin'), '--transpile-only', __filename, '--mode', mode, '--json'],
      { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', maxBuffer: 64 << 20, timeout: 15 * 60_000 },
    );
    const line = child.stdout?.split('\n').find((l) => l.startsWith('RESULT '));
    if (child.status !== 0 || !line) throw new Error(`candidate ${mode} failed (exit ${child.status})`);
    results.push(JSON.parse(line.slice('RESULT '.length)) as Result);
  }
  console.log(`node ${process.version}, concurrency ${CONCURRENCY}, payload 300 chars\n`);
  printTables(results);
  console.log("\ninterleave trials (T2 issued as soon as T1's INSERT returned):");
  results[0].interleave.forEach((t, i) => console.log(`  ${i + 1}. ${t.trial}`));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
