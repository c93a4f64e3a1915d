import { ChildProcess, spawn } from 'node:child_process';
import { createServer, IncomingMessage, request as httpRequest, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { freePort } from './processes';

const ROOT = join(__dirname, '..', '..');
const PRISM = join(ROOT, 'node_modules', '.bin', 'prism');
const ADYEN_SPEC = join(ROOT, 'test', 'vendor-specs', 'adyen-checkout-v71.json');
/** Checkout.com's NAS API reference (test/vendor-specs/README.md). */
export const CHECKOUT_SPEC = join(ROOT, 'test', 'vendor-specs', 'checkout-nas.json');
/** Prism answers its own errors (invalid request, invalid response with --errors, no route...) with these types. */
const PRISM_ERROR = 'https://stoplight.io/prism/errors#';

export interface PrismProxy {
  /** Where the client under test sends its Adyen requests (paths as in the spec: `/payments`, no `/v71`). */
  baseUrl: string;
  /** Prism itself, without the recording hop (violations of requests sent here are known from Prism's log only). */
  prismUrl: string;
  /** Every request or response violation Prism reported since the start (or the last `clear()`). */
  violations(): string[];
  /** Forgets the violations seen so far. */
  clear(): void;
  close(): Promise<void>;
}

export interface Seen {
  /** `POST /payments`, or '' when Prism's log line does not say. */
  route: string;
  text: string;
}

/**
 * What pairs one of Prism's log lines with the exchange it is about: `POST /payments UNPROCESSABLE_ENTITY` for a
 * request Prism ended with one of its errors, `Violation: <location> <message>` for a violation that did not.
 */
type LogKey = string;

/**
 * Runs `prism proxy` with a vendor's OpenAPI document (`spec`: Adyen's Checkout v71 unless given) in front of `upstreamBaseUrl`, with `--errors`: a request
 * that breaks the document is answered 422 by Prism and not forwarded; an answer of the upstream that breaks it
 * (an error in Prism's terms) is replaced by a 500; a warning (a status code the document does not list for a 4xx,
 * for one) passes with an `sl-violations` header. Violations are collected from two places:
 * - a small recording hop in front of Prism (`baseUrl`), which reads Prism's problem answers and the
 *   `sl-violations` header: every detail, and recorded before the client sees the answer, so a test can look
 *   at violations() as soon as its request returned;
 * - Prism's log lines (`Request terminated with error: …#TYPE`, `Violation: …`), for what the hop could not see
 *   (a request whose client went away before Prism answered, a request sent to `prismUrl` directly). A log line
 *   about an exchange the hop already reported is not counted twice, whichever of the two arrives first.
 */
export async function startPrismProxy(upstreamBaseUrl: string, spec = ADYEN_SPEC): Promise<PrismProxy> {
  const fromAnswers: Seen[] = [];
  /** Log lines that no exchange seen by the hop accounts for (yet). */
  const fromLog: (Seen & { key: LogKey })[] = [];
  /** Log lines the hop's exchanges will produce, not arrived yet. */
  const awaited = new Map<LogKey, number>();
  const onLog = (line: string) => {
    const seen = parseLogLine(line);
    if (!seen) return;
    const key = logKey(seen);
    const pending = awaited.get(key) ?? 0;
    if (pending > 0) awaited.set(key, pending - 1);
    else fromLog.push({ ...seen, key });
  };
  const onAnswer = (seen: Seen[], keys: LogKey[]) => {
    fromAnswers.push(...seen);
    for (const key of keys) {
      const i = fromLog.findIndex((s) => s.key === key);
      if (i >= 0) fromLog.splice(i, 1);
      else awaited.set(key, (awaited.get(key) ?? 0) + 1);
    }
  };
  let child: ChildProcess | undefined;
  let port = 0;
  for (let attempt = 1; !child; attempt++) {
    port = await freePort();
    try {
      child = await spawnPrism(spec, upstreamBaseUrl, port, onLog);
    } catch (error) {
      // Another process may have taken the port between freePort() and Prism's listen: try another one.
      if (attempt >= 3 || !/EADDRINUSE/.test(String(error))) throw error;
    }
  }
  const prism = child;
  const killGroup = () => {
    try {
      process.kill(-prism.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  process.once('exit', killGroup);
  const hop = await startRecordingHop(port, onAnswer);

  return {
    baseUrl: `http://127.0.0.1:${(hop.address() as AddressInfo).port}`,
    prismUrl: `http://127.0.0.1:${port}`,
    violations() {
      return [...fromAnswers, ...fromLog].map((s) => (s.route ? `${s.route}: ${s.text}` : s.text));
    },
    clear() {
      fromAnswers.length = 0;
      fromLog.length = 0;
    },
    async close() {
      hop.closeAllConnections();
      await new Promise<void>((resolve) => hop.close(() => resolve()));
      process.removeListener('exit', killGroup);
      if (prism.exitCode !== null || prism.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => prism.once('exit', () => resolve()));
      process.kill(-prism.pid!, 'SIGTERM');
      const timer = setTimeout(killGroup, 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Starts Prism in its own process group (so that close() ends it and anything it forked) and waits for it to listen. */
function spawnPrism(
  spec: string,
  upstream: string,
  port: number,
  onLine: (line: string) => void,
): Promise<ChildProcess> {
  const child = spawn(PRISM, ['proxy', spec, upstream, '-p', String(port), '-h', '127.0.0.1', '--errors'], {
    cwd: ROOT,
    // One process (no cluster worker), no colours in the log lines that are parsed.
    env: { ...process.env, NODE_ENV: 'test', FORCE_COLOR: '0', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      reject(new Error(`prism did not start within 30 s:\n${output}`));
    }, 30_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`prism exited (${code}) before listening:\n${output}`));
    };
    child.once('exit', onExit);
    for (const stream of [child.stdout, child.stderr]) {
      let pending = '';
      stream.on('data', (chunk: Buffer) => {
        if (output.length < 20_000) output += chunk.toString();
        pending += chunk.toString();
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const raw of lines) {
          const line = stripAnsi(raw);
          onLine(line);
          if (line.includes('Prism is listening on')) {
            clearTimeout(timer);
            child.removeListener('exit', onExit);
            resolve(child);
          }
        }
      });
    }
  });
}

function logKey(seen: Seen): LogKey {
  return seen.route ? `${seen.route} ${seen.text.split(':')[0]}` : `Violation: ${seen.text}`;
}

function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}

/**
 * Prism's log lines about a violation, as `prism proxy` prints them:
 *   `[HTTP SERVER] post /payments ✖  error     Request terminated with error: https://stoplight.io/prism/errors#UNPROCESSABLE_ENTITY: Invalid request`
 *   `[VALIDATOR] ⚠  warning   Violation: response.body …` (violations that do not stop the answer)
 * Errors that are not Prism's verdict on the document (the upstream unreachable, for one) are not violations.
 */
export function parseLogLine(line: string): Seen | undefined {
  const terminated = /\[HTTP SERVER\] (\w+) (\S+) .*Request terminated with error: (.*)$/.exec(line);
  if (terminated) {
    if (!terminated[3].startsWith(PRISM_ERROR)) return undefined;
    return {
      route: `${terminated[1].toUpperCase()} ${terminated[2]}`,
      text: `${terminated[3].slice(PRISM_ERROR.length)} (Prism's log)`,
    };
  }
  const violation = /Violation: (.*)$/.exec(line);
  if (violation) return { route: '', text: violation[1].trim() };
  return undefined;
}

/**
 * A pass-through HTTP hop in front of Prism that reads Prism's verdict on each exchange: the `sl-violations`
 * header (violations that did not stop the answer) and Prism's problem answers (422 invalid request, 500
 * invalid response, 401 security, 404 no route), one entry per violation listed.
 */
async function startRecordingHop(
  prismPort: number,
  record: (seen: Seen[], logKeys: LogKey[]) => void,
): Promise<Server> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const route = `${req.method ?? 'GET'} ${new URL(req.url ?? '/', 'http://hop').pathname}`;
    const headers = { ...req.headers, host: `127.0.0.1:${prismPort}` };
    const upstream = httpRequest(
      { host: '127.0.0.1', port: prismPort, method: req.method, path: req.url, headers, agent: false },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          record(...verdict(route, answer, body));
          const out = { ...answer.headers };
          for (const h of ['transfer-encoding', 'connection', 'keep-alive']) delete out[h];
          out['content-length'] = String(body.length);
          res.writeHead(answer.statusCode ?? 502, out);
          res.end(body);
        });
        answer.on('error', () => res.destroy());
      },
    );
    upstream.on('error', (error) => {
      if (res.headersSent || res.destroyed) return;
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`prism hop: ${error.message}`);
    });
    // The client gave up (its time-out while the upstream hangs): let go of Prism too.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

interface Validation {
  location?: string[];
  message?: string;
}

/** The violations of one exchange, and the log lines Prism writes about them. */
function verdict(route: string, answer: IncomingMessage, body: Buffer): [Seen[], LogKey[]] {
  const describe = (v: Validation) => `${(v.location ?? []).join('.')} ${v.message ?? ''}`.trim();
  let problem: { type?: string; title?: string; detail?: string; validation?: Validation[] } | undefined;
  if (String(answer.headers['content-type']).startsWith('application/problem+json')) {
    try {
      problem = JSON.parse(body.toString('utf8')) as typeof problem;
    } catch {
      problem = undefined;
    }
  }
  if (problem?.type?.startsWith(PRISM_ERROR)) {
    const name = problem.type.slice(PRISM_ERROR.length);
    const kind = `${name} ${answer.statusCode}`;
    const seen = problem.validation?.length
      ? problem.validation.map((v) => ({ route, text: `${kind}: ${describe(v)}` }))
      : [{ route, text: `${kind}: ${`${problem.title ?? ''} ${problem.detail ?? ''}`.trim()}` }];
    return [seen, [`${route} ${name}`]];
  }
  const header = answer.headers['sl-violations'];
  if (typeof header !== 'string') return [[], []];
  try {
    const listed = JSON.parse(header) as Validation[];
    return [
      listed.map((v) => ({ route, text: describe(v) })),
      listed.map((v) => `Violation: ${describe(v)}`),
    ];
  } catch {
    return [[{ route, text: header }], []];
  }
}
