/**
 * One autocannon run, in its own process (so that the load generator does not share the server's event
 * loop): reads a scenario as JSON from stdin (or argv[2]), prints the result as JSON on stdout.
 *
 * Tokenize scenarios name a body kind (`bodyKind: { cards: 100 }`) rather than a fixed body: every
 * request gets a body built for it, of card numbers this process never sent before (see `cardNumber`).
 */
import autocannon from 'autocannon';
import { randomInt, randomUUID } from 'node:crypto';

/**
 * A tokenize body built afresh for each request: `cards` card elements, each a distinct, Luhn-valid,
 * 16-digit Visa-style number with an expiry and a CVC; one card is sent as an object (tokenize's single
 * form), more as an array. `fields` are added to every element (e.g. `search_indexes`).
 */
export interface BodyKind {
  cards: number;
  fields?: Record<string, unknown>;
}

export interface LoadScenario {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** A fixed body, sent with every request. */
  body?: string;
  /** A body built for every request (tokenize scenarios), instead of `body`. */
  bodyKind?: BodyKind;
  /** Paths (with their query) to pick from at random for every request, instead of the url's. */
  paths?: string[];
  /** A fresh BT-IDEMPOTENCY-KEY on every request. */
  idempotencyKey?: boolean;
  /** Also report requests/s and latency per window of this many seconds. */
  windowSeconds?: number;
  connections: number;
  duration: number;
}

/** One window of a run: the responses that completed in it. */
export interface LoadWindow {
  /** Seconds from the start of the run. */
  from: number;
  to: number;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** The answers other than 2xx, by status (e.g. `{ "503": 2 }`). */
  non2xxByStatus?: Record<string, number>;
  errors: number;
  windows?: LoadWindow[];
}

/**
 * Card numbers unique to this process and, but for a one-in-a-million chance, to every other: `4`, then
 * the eight digits of a counter (started at a random point) split around six random digits fixed for the
 * process, then the Luhn check digit: `4 CCCCC PPPPPP CCC L`. The counter's digits sit in the first six
 * and the last four digits, so two numbers of one process never share those: the card enumeration guard
 * groups numbers by them (at most 10 distinct numbers per group and tenant a day, as a real card
 * population spreads over BINs and last fours); the random middle keeps two processes' numbers apart.
 */
const PROCESS_DIGITS = String(randomInt(1_000_000)).padStart(6, '0');
let counter = randomInt(50_000_000);

export function luhnCheckDigit(payload: string): number {
  let sum = 0;
  for (let i = 0; i < payload.length; i++) {
    // Doubled: every second digit from the right of the full number, the check digit being the first.
    let d = payload.charCodeAt(payload.length - 1 - i) - 48;
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}

export function cardNumber(): string {
  const c = String(counter++ % 100_000_000).padStart(8, '0');
  const payload = `4${c.slice(0, 5)}${PROCESS_DIGITS}${c.slice(5)}`;
  return `${payload}${luhnCheckDigit(payload)}`;
}

const YEAR = new Date().getUTCFullYear();

function cardElement(fields?: Record<string, unknown>): Record<string, unknown> {
  return {
    type: 'card',
    data: {
      number: cardNumber(),
      expiration_month: 1 + randomInt(12),
      expiration_year: YEAR + 1 + randomInt(5),
      cvc: String(randomInt(1000)).padStart(3, '0'),
    },
    ...fields,
  };
}

export function buildBody(kind: BodyKind): string {
  return JSON.stringify(
    kind.cards === 1
      ? cardElement(kind.fields)
      : Array.from({ length: kind.cards }, () => cardElement(kind.fields)),
  );
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;
}

async function readScenario(): Promise<LoadScenario> {
  if (process.argv[2]) return JSON.parse(process.argv[2]) as LoadScenario;
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as LoadScenario;
}

async function main(): Promise<void> {
  const scenario = await readScenario();
  const { bodyKind, paths, idempotencyKey } = scenario;
  const dynamic = bodyKind !== undefined || paths !== undefined || idempotencyKey;
  const setupRequest = (req: autocannon.Request): autocannon.Request => ({
    ...req,
    ...(bodyKind ? { body: buildBody(bodyKind) } : {}),
    ...(paths ? { path: paths[randomInt(paths.length)] } : {}),
    ...(idempotencyKey ? { headers: { ...req.headers, 'BT-IDEMPOTENCY-KEY': randomUUID() } } : {}),
  });
  // Latency and completion time of every response, when windows are asked for.
  const responses: { at: number; ms: number; ok: boolean }[] = [];
  const started = Date.now();
  const instance = autocannon(
    {
      url: scenario.url,
      method: scenario.method,
      headers: scenario.headers,
      body: scenario.body,
      connections: scenario.connections,
      duration: scenario.duration,
      ...(dynamic ? { requests: [{ setupRequest }] } : {}),
    },
    (error: unknown, result: autocannon.Result) => {
      if (error) {
        process.stderr.write(
          `${error instanceof Error ? (error.stack ?? error.message) : JSON.stringify(error)}\n`,
        );
        process.exit(1);
      }
      const out: LoadResult = {
        requests: result.requests.total,
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        non2xx: result.non2xx,
        errors: result.errors + result.timeouts,
      };
      const failed = Object.entries(result.statusCodeStats ?? {}).filter(
        ([status]) => !status.startsWith('2'),
      );
      if (failed.length)
        out.non2xxByStatus = Object.fromEntries(failed.map(([s, { count }]) => [s, count ?? 0]));
      if (scenario.windowSeconds)
        out.windows = windows(responses, scenario.windowSeconds, Date.now() - started);
      process.stdout.write(JSON.stringify(out));
    },
  );
  if (scenario.windowSeconds)
    instance.on('response', (_client, statusCode, _bytes, responseTime) =>
      responses.push({
        at: Date.now() - started,
        ms: responseTime,
        ok: statusCode >= 200 && statusCode < 300,
      }),
    );
}

/**
 * The responses grouped by the window they completed in; those that completed after the last full window
 * (in flight when the run's time was up) count in the last one, whose rate is over its actual length.
 */
function windows(
  responses: { at: number; ms: number; ok: boolean }[],
  seconds: number,
  elapsedMs: number,
): LoadWindow[] {
  const count = Math.max(1, Math.floor(elapsedMs / 1000 / seconds));
  const buckets = Array.from({ length: count }, () => ({ ms: [] as number[], non2xx: 0 }));
  for (const r of responses) {
    const bucket = buckets[Math.min(count - 1, Math.floor(r.at / 1000 / seconds))];
    bucket.ms.push(r.ms);
    if (!r.ok) bucket.non2xx++;
  }
  return buckets.map((b, i) => {
    const from = i * seconds;
    const to = i === count - 1 ? elapsedMs / 1000 : (i + 1) * seconds;
    const sorted = b.ms.sort((x, y) => x - y);
    return {
      from,
      to,
      requests: sorted.length,
      rps: sorted.length / (to - from),
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      non2xx: b.non2xx,
    };
  });
}

if (require.main === module) void main();
