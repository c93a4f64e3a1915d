import { Client } from 'pg';
import { spawnJs, Spawned, waitForReady } from '../support/processes';

export interface Server {
  spawned: Spawned;
  port: number;
  base: string;
}

export async function startServer(
  port: number,
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<Server> {
  const spawned = spawnJs('dist/main.js', [], {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    BOOTSTRAP: 'true',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000000',
    ...env,
  });
  await waitForReady(port, 90_000);
  return { spawned, port, base: `http://127.0.0.1:${port}` };
}

export async function api(base: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'BT-API-KEY': key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

/** A private key with token permissions, made with the bootstrap management key the server printed. */
export async function privateKey(server: Server): Promise<string> {
  const managementKey = /(key_mgt_[0-9A-Za-z]+)/.exec(server.spawned.stdout())?.[1];
  if (!managementKey)
    throw new Error(`no bootstrap key:\n${server.spawned.stdout()}\n${server.spawned.stderr()}`);
  const app = await api(server.base, managementKey, 'POST', '/applications', {
    name: 'faults',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  });
  return app.body!.key as string;
}

export interface Load {
  /** Request number -> the token ids its 201 returned. */
  acknowledged: Map<string, string[]>;
  statuses: number[];
  stop(): Promise<void>;
}

/** Tokenize requests of 10 tokens each, `workers` at a time, until stopped; each tagged with its number. */
export function tokenizeLoad(base: () => string, key: string, workers = 8): Load {
  const acknowledged = new Map<string, string[]>();
  const statuses: number[] = [];
  let running = true;
  let n = 0;
  const run = Math.random().toString(36).slice(2, 8);
  const worker = async (w: number) => {
    while (running) {
      const request = `${run}-${w}-${n++}`;
      try {
        const res = await fetch(`${base()}/tokenize`, {
          method: 'POST',
          headers: { 'BT-API-KEY': key, 'Content-Type': 'application/json' },
          body: JSON.stringify(
            Array.from({ length: 10 }, (_, i) => ({
              type: 'token',
              data: `${request}-${i}`,
              metadata: { request },
            })),
          ),
        });
        statuses.push(res.status);
        const text = await res.text();
        if (res.status === 201)
          acknowledged.set(
            request,
            (JSON.parse(text) as { id: string }[]).map((t) => t.id),
          );
      } catch {
        statuses.push(0);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  const done = Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  return {
    acknowledged,
    statuses,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** Every request's tokens exist all or none; returns [requests with 10 tokens, requests with another count]. */
export async function allOrNone(databaseUrl: string): Promise<{ complete: number; partial: string[] }> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ request: string; n: number }>(
      `SELECT metadata->>'request' AS request, count(*)::int AS n FROM tokens WHERE metadata ? 'request' GROUP BY 1`,
    );
    return {
      complete: rows.filter((r) => r.n === 10).length,
      partial: rows.filter((r) => r.n !== 10).map((r) => `${r.request}:${r.n}`),
    };
  } finally {
    await client.end();
  }
}
