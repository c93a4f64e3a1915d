import { PGlite } from '@electric-sql/pglite';
import { readFileSync } from 'node:fs';
import { QuickEnvironment } from './quick-environment';

/**
 * The service tier's test environment: the quick tier's (no sockets), plus one PGlite per Jest worker, started from the migrated
 * image (service-database.ts builds it) the first time a spec file asks and put back to that image before
 * each later file. Starting PGlite in every file cost about 0.5 s of its setup and as much again of
 * garbage collection and module evaluation inside the spec's sandbox (24 files on two cores); putting a
 * database back costs one TRUNCATE of the tables a spec wrote.
 *
 * This module is loaded once per worker outside the specs' sandboxes (Jest requires environments with
 * Node's own loader), so what it keeps lives as long as the worker. A spec reaches it through
 * `globalThis[Symbol.for('vault.serviceDatabase')]` (a function: the image's path in, the PGlite out;
 * `Symbol.for` names the same symbol in both realms).
 */

/** What "the image" holds beyond empty tables: the rows migrations wrote, and each sequence's position. */
interface ImageState {
  readonly tables: string[];
  readonly seeds: { table: string; rows: unknown[] }[];
  readonly sequences: { name: string; value: string; called: boolean }[];
}

let worker: { image: string; db: Promise<PGlite>; state: Promise<ImageState> } | undefined;

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

async function imageState(db: PGlite): Promise<ImageState> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
  );
  const tables = rows.map((row) => row.name).filter((name) => name !== 'migrations');
  const seeds: ImageState['seeds'] = [];
  for (const table of tables) {
    const seeded = await db.query<{ row: unknown }>(
      `SELECT to_jsonb(t) AS row FROM public.${quoted(table)} t`,
    );
    if (seeded.rows.length) seeds.push({ table, rows: seeded.rows.map((r) => r.row) });
  }
  const sequences = await db.query<{ name: string }>(
    `SELECT sequencename AS name FROM pg_sequences WHERE schemaname = 'public'`,
  );
  const positions: ImageState['sequences'] = [];
  for (const { name } of sequences.rows) {
    const position = await db.query<{ value: string; called: boolean }>(
      `SELECT last_value::text AS value, is_called AS called FROM public.${quoted(name)}`,
    );
    positions.push({ name, ...position.rows[0] });
  }
  return { tables, seeds, sequences: positions };
}

/** The protocol's Sync message: ends whatever extended query a previous file left half-sent. */
const SYNC = new Uint8Array([0x53, 0, 0, 0, 4]);

/**
 * Puts `db` back to the image: no open transaction, no session state (settings, advisory locks, LISTENs,
 * prepared statements: DISCARD ALL), every table written since emptied and its seed rows restored, every
 * sequence where the image had it. Triggers stay off while it does (the audit log refuses a TRUNCATE).
 */
async function restore(db: PGlite, state: ImageState): Promise<void> {
  await db.execProtocolRaw(SYNC);
  await db.exec('ROLLBACK');
  await db.exec('DISCARD ALL');
  const written = await db.query<{ name: string }>(
    state.tables
      .map((table) => `SELECT '${table}' AS name WHERE EXISTS (SELECT FROM public.${quoted(table)})`)
      .join(' UNION ALL '),
  );
  await db.transaction(async (tx) => {
    await tx.exec('SET LOCAL session_replication_role = replica');
    if (written.rows.length)
      await tx.exec(`TRUNCATE ${written.rows.map((row) => `public.${quoted(row.name)}`).join(', ')} CASCADE`);
    for (const { table, rows } of state.seeds)
      await tx.query(
        `INSERT INTO public.${quoted(table)} SELECT * FROM jsonb_populate_recordset(NULL::public.${quoted(table)}, $1)`,
        [JSON.stringify(rows)],
      );
    for (const { name, value, called } of state.sequences)
      await tx.query(`SELECT setval($1, $2::bigint, $3)`, [`public.${quoted(name)}`, value, called]);
  });
}

/** The worker's database as the image at `imagePath` has it: started on first use, restored afterwards. */
async function serviceDatabase(imagePath: string): Promise<PGlite> {
  if (worker?.image !== imagePath) {
    if (worker) await (await worker.db).close();
    const db = PGlite.create({ loadDataDir: new Blob([readFileSync(imagePath)]) });
    worker = { image: imagePath, db, state: db.then(imageState) };
    await worker.state;
    return db;
  }
  const db = await worker.db;
  await restore(db, await worker.state);
  return db;
}

/**
 * Closes the worker's database. PostgreSQL keeps timers armed while idle (its statistics flush, every
 * 10 s), so a process holding an open PGlite would not exit when its work is done: a Jest worker, told
 * to end, drops its `message` listener and waits to exit by itself (and is killed, with a warning, half
 * a second later); an in-band run (one file, or `-i`) ends with the service project's global teardown
 * (service-teardown.ts), in the same process.
 */
export async function closeServiceDatabase(): Promise<void> {
  const ending = worker;
  worker = undefined;
  if (ending) await (await ending.db).close();
}

if (process.send)
  process.on('removeListener', (event) => {
    if (event === 'message' && process.listenerCount('message') === 0) void closeServiceDatabase();
  });

export default class ServiceEnvironment extends QuickEnvironment {
  override async setup(): Promise<void> {
    await super.setup();
    this.global[Symbol.for('vault.serviceDatabase')] = serviceDatabase;
  }
}
