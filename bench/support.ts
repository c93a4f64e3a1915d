/**
 * What the bench scripts share: the built service's environment, JSON calls to its API, a load run in its
 * own process, audit rows inserted in bulk, and the checkpoint lag of a tenant's audit log.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Client } from 'pg';
import type { LoadResult, LoadScenario } from './load';

const ROOT = join(__dirname, '..');

/** The environment the built service runs under in a benchmark (production mode, rate limit out of the way). */
export function serviceEnv(databaseUrl: string, port: number): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    BOOTSTRAP: 'true',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    RATE_LIMIT_PER_MINUTE: '100000000',
    ENCRYPTION_KEYS: `v1:${randomBytes(32).toString('base64')}`,
  };
}

/** A JSON call with an API key; anything but a 2xx throws with the answer. */
export async function api(
  base: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- set-up calls read a few fields of JSON answers
): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'BT-API-KEY': key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/**
 * Runs bench/load.ts in its own process (the scenario on its stdin: a list of paths can be longer than
 * one argument may be), without blocking this one, so that it can sample the server meanwhile.
 */
export function runLoad(scenario: LoadScenario): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    let out = '';
    const child = spawn(
      process.execPath,
      [join(ROOT, 'node_modules/ts-node/dist/bin.js'), '--transpile-only', join(ROOT, 'bench/load.ts')],
      { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] },
    );
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`load exited ${code}`)),
    );
    child.stdin.end(JSON.stringify(scenario));
  });
}

/** Rows per INSERT ... SELECT generate_series statement of `insertAuditRows`. */
const AUDIT_BATCH = 250_000;

/**
 * Inserts `count` audit rows (token reads by an application) for a tenant with SQL, in INSERT ... SELECT
 * generate_series statements of at most 250,000 rows in one transaction (every row becomes visible at
 * once, at its commit), then ANALYZEs the table. Answers when it committed (`Date.now()`).
 *
 * - `backdated` (for reads over a long log): the rows are an hour old and older, 7 seconds apart.
 * - `appended` (for the checkpointer to take up, as if the service had just written them): only the log's
 *   own columns, dated from the transaction's start 1 µs apart, so that they follow every row already
 *   written in whatever order the log is read ((created_at, id) or the order of insertion).
 */
export async function insertAuditRows(
  client: Client,
  tenantId: string,
  count: number,
  layout: 'backdated' | 'appended',
): Promise<number> {
  const createdAt =
    layout === 'backdated'
      ? `now() - interval '1 hour' - (i * interval '7 seconds')`
      : `now() + (i * interval '1 microsecond')`;
  await client.query('BEGIN');
  try {
    for (let first = 1; first <= count; first += AUDIT_BATCH) {
      const last = Math.min(count, first + AUDIT_BATCH - 1);
      await client.query(
        `INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message,
                                 created_at)
         SELECT gen_random_uuid(), $1, NULL, 'application', 'token', gen_random_uuid()::text, 'read', 'Token read',
                ${createdAt}
           FROM generate_series(${first}, ${last}) AS i`,
        [tenantId],
      );
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
  const committedAt = Date.now();
  await client.query('ANALYZE audit_logs');
  return committedAt;
}

/** The tenant's audit rows (what its tree would have as leaves once every one is checkpointed). */
export async function auditRowCount(client: Client, tenantId: string): Promise<number> {
  const { rows } = await client.query<{ count: string }>(
    'SELECT count(*) FROM audit_logs WHERE tenant_id = $1',
    [tenantId],
  );
  return Number(rows[0].count);
}

/**
 * The tree size of the tenant's latest checkpoint (`GET /logs/checkpoint`): 0 before its first (a 404
 * with code `no_checkpoint`), or, when the service answers anything else (a service without signed
 * checkpoints has no such route), why it cannot be read.
 */
export async function checkpointSize(
  base: string,
  key: string,
): Promise<{ treeSize: number } | { unavailable: string }> {
  let res: Response;
  try {
    res = await fetch(`${base}/logs/checkpoint`, { headers: { 'BT-API-KEY': key } });
  } catch (error) {
    return { unavailable: `GET /logs/checkpoint failed: ${String(error)}` };
  }
  const text = await res.text();
  let body: { tree_size?: unknown; code?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // not JSON: reported below
  }
  if (res.status === 404 && body.code === 'no_checkpoint') return { treeSize: 0 };
  if (res.ok && typeof body.tree_size === 'number') return { treeSize: body.tree_size };
  return {
    unavailable: `GET /logs/checkpoint answered ${res.status}${typeof body.code === 'string' ? ` (${body.code})` : ''}${res.ok ? ' without a tree_size' : ''}`,
  };
}

export interface CheckpointWait {
  /** The audit rows of the tenant when the wait began. */
  rows: number;
  /** Rows not yet in a checkpoint when the wait began (rows - tree size). */
  lagAtStart: number;
  /** Whether every row was in a checkpoint before the time was up. */
  caughtUp: boolean;
  /** Seconds from the wait's start until every row was in a checkpoint (or until it gave up). */
  seconds: number;
  /** The latest checkpoint's tree size when the wait ended. */
  treeSize: number;
}

/**
 * Waits until the tenant's latest checkpoint covers every one of its audit rows, polling
 * `GET /logs/checkpoint` every `pollMs`, for at most `timeoutMs`. The rows are counted once at the start
 * (nothing writes audit rows meanwhile: reading checkpoints writes none), and again before declaring it
 * caught up. `progress` is called about every 30 seconds. Answers why not when checkpoints cannot be read.
 */
export async function waitForCheckpoint(
  client: Client,
  tenantId: string,
  base: string,
  key: string,
  {
    pollMs = 250,
    timeoutMs = 60_000,
    progress,
  }: { pollMs?: number; timeoutMs?: number; progress?: (wait: CheckpointWait) => void } = {},
): Promise<CheckpointWait | { unavailable: string }> {
  const start = Date.now();
  let rows = await auditRowCount(client, tenantId);
  const first = await checkpointSize(base, key);
  if ('unavailable' in first) return first;
  const wait: CheckpointWait = {
    rows,
    lagAtStart: rows - first.treeSize,
    caughtUp: false,
    seconds: 0,
    treeSize: first.treeSize,
  };
  let reported = start;
  for (;;) {
    const now = Date.now();
    wait.seconds = (now - start) / 1000;
    if (wait.treeSize >= rows) {
      rows = await auditRowCount(client, tenantId);
      if (wait.treeSize >= rows) {
        wait.caughtUp = true;
        return wait;
      }
    }
    if (now - start >= timeoutMs) return wait;
    if (progress && now - reported >= 30_000) {
      reported = now;
      progress(wait);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    const size = await checkpointSize(base, key);
    if ('unavailable' in size) return size;
    wait.treeSize = size.treeSize;
  }
}
