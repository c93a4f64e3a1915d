/**
 * One autocannon run, in its own process (so that the load generator does not share the server's event
 * loop): reads a scenario as JSON from argv[2], prints the result as JSON on stdout.
 */
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';

export interface LoadScenario {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** A fresh BT-IDEMPOTENCY-KEY on every request. */
  idempotencyKey?: boolean;
  connections: number;
  duration: number;
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function main(): Promise<void> {
  const scenario = JSON.parse(process.argv[2]) as LoadScenario;
  const result = await autocannon({
    url: scenario.url,
    method: scenario.method,
    headers: scenario.headers,
    body: scenario.body,
    connections: scenario.connections,
    duration: scenario.duration,
    ...(scenario.idempotencyKey
      ? {
          requests: [
            {
              setupRequest: (req) => ({
                ...req,
                headers: { ...req.headers, 'BT-IDEMPOTENCY-KEY': randomUUID() },
              }),
            },
          ],
        }
      : {}),
  });
  const out: LoadResult = {
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
  process.stdout.write(JSON.stringify(out));
}

void main();
