import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { ShutdownState } from './shutdown-state';

export interface GracefulShutdownOptions {
  /** The HTTP server of the application. */
  server: Server;
  state: ShutdownState;
  /** SHUTDOWN_GRACE_MS: from the signal to the end of the whole shutdown. */
  graceMs: number;
  /**
   * SHUTDOWN_DRAIN_DELAY_MS: how long it goes on accepting and serving, not ready, before its listening
   * socket closes (at most the grace).
   */
  drainDelayMs?: number;
  /** Closes the application once requests and jobs are done: Nest's shutdown hooks, the database pool last. */
  close: () => Promise<void>;
  /** Writes one line for the operator. */
  log: (line: string) => void;
}

/** Background work must have released what it still holds this long before the grace runs out. */
export const RELEASE_MARGIN_MS = 2_000;
/** How often sockets left idle by a finished answer are closed while draining. */
const IDLE_SWEEP_MS = 50;
/** Requests named in the line that says what was cut. */
const NAMED_CUTS = 5;

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * The stop of a server process on SIGTERM or SIGINT, in phases, each logged in one line:
 *
 * 1. not ready: `GET /health/ready` answers 503 (liveness stays 200); for the drain delay the server
 *    goes on accepting and serving (each answer with `Connection: close`), so that a balancer's health
 *    check takes it out of rotation before anything is refused: no connection is reset in its accept
 *    queue, and no balancer has a reason to send a request twice;
 * 2. draining: the listening socket closes, answers carry `Connection: close` and idle keep-alive
 *    sockets are closed, while the requests in flight (proxy requests and vendor calls included)
 *    finish; from the signal on, the registered background work stops at a safe point
 *    (ShutdownState.stopWork);
 * 3. jobs stopped, requests finished (in either order);
 * 4. closed: the application closes (Nest's shutdown hooks: outbound clients, the listening connection,
 *    the database pool), and the process exits 0.
 *
 * The whole of it has SHUTDOWN_GRACE_MS. When that runs out, or at a second signal, what still runs is cut:
 * one line names it, the remaining connections are destroyed, and the exit code is 1.
 *
 * Not Nest's own `enableShutdownHooks`: its listener runs the modules' destroy hooks (which close the
 * outbound clients and the expression workers the requests in flight are using) before the HTTP server
 * stops, has no time limit and ignores a second signal. The application's parts still stop in Nest's
 * hooks; this only decides when `app.close()` comes.
 */
export class GracefulShutdown {
  /** Requests not answered yet, each with `METHOD /path` for the line that says what was cut. */
  private readonly inFlight = new Map<ServerResponse, string>();
  private startedAt?: number;
  private cutShort?: (reason: string) => void;

  constructor(private readonly options: GracefulShutdownOptions) {
    options.server.on('request', (req: IncomingMessage, res: ServerResponse) => this.track(req, res));
  }

  /** SIGTERM and SIGINT start the shutdown, a second one cuts it; `exit` ends the process with its code. */
  listen(exit: (code: number) => void, signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): void {
    for (const signal of signals)
      process.on(signal, () => {
        if (this.startedAt !== undefined) this.cutShort?.(`second ${signal}`);
        else void this.run(signal).then(exit);
      });
  }

  /** The shutdown, signal given; resolves with the exit code (0: everything finished within the grace). */
  async run(signal: string): Promise<number> {
    if (this.startedAt !== undefined) throw new Error('the shutdown has already begun');
    const startedAt = (this.startedAt = Date.now());
    const { server, state, graceMs, log } = this.options;
    state.begin();
    const delayMs = Math.min(this.options.drainDelayMs ?? 0, graceMs);
    log(`shutdown: ${signal}: not ready${delayMs > 0 ? `, serving for ${delayMs} ms more` : ''}`);
    for (const res of this.inFlight.keys()) closeAfterAnswer(res);

    let timer: NodeJS.Timeout | undefined;
    const cut = new Promise<string>((resolve) => {
      this.cutShort = resolve;
      timer = setTimeout(() => resolve(`the grace of ${graceMs} ms ran out`), graceMs);
    });
    const releaseBy = startedAt + graceMs - Math.min(RELEASE_MARGIN_MS, graceMs / 4);
    const jobs = state
      .stopWork(releaseBy)
      .then((accounts) => log(`shutdown: jobs stopped${accounts.length ? ` (${accounts.join('; ')})` : ''}`));

    let pause: NodeJS.Timeout | undefined;
    const early =
      delayMs > 0
        ? await Promise.race([
            new Promise<undefined>((resolve) => (pause = setTimeout(() => resolve(undefined), delayMs))),
            cut,
          ])
        : undefined;
    clearTimeout(pause);
    if (early !== undefined) {
      clearTimeout(timer);
      log(`shutdown: ${early}: ${this.whatIsCut(false)}`);
      server.close();
      server.closeAllConnections();
      return 1;
    }

    const drained = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    log(
      `shutdown: draining ${plural(this.inFlight.size, 'request')}, no new connections (grace ${graceMs} ms)`,
    );

    const requests = drained.then(() =>
      log(`shutdown: requests finished after ${Date.now() - startedAt} ms`),
    );
    let closing = false;
    const done = Promise.all([jobs, requests]).then(async () => {
      closing = true;
      await this.options.close();
    });

    try {
      const reason = await Promise.race([done.then(() => undefined), cut]);
      if (reason === undefined) {
        log(`shutdown: closed after ${Date.now() - startedAt} ms`);
        return 0;
      }
      log(`shutdown: ${reason}: ${this.whatIsCut(closing)}`);
      server.closeAllConnections();
      return 1;
    } catch (error) {
      log(`shutdown: could not close: ${error instanceof Error ? error.message : String(error)}`);
      return 1;
    } finally {
      clearInterval(sweep);
      clearTimeout(timer);
    }
  }

  private track(req: IncomingMessage, res: ServerResponse): void {
    this.inFlight.set(res, `${req.method} ${(req.url ?? '').split('?')[0].slice(0, 100)}`);
    res.once('close', () => this.inFlight.delete(res));
    if (this.startedAt !== undefined) closeAfterAnswer(res);
  }

  private whatIsCut(closing: boolean): string {
    if (closing) return 'cut while closing the application';
    const requests = [...this.inFlight.values()];
    const named = requests.slice(0, NAMED_CUTS).join(', ') + (requests.length > NAMED_CUTS ? ', ...' : '');
    const jobs = this.options.state.stillRunning;
    return [
      `cut ${plural(requests.length, 'request')}${requests.length ? ` (${named})` : ''}`,
      ...(jobs.length ? [`jobs still running: ${jobs.join(', ')}`] : []),
    ].join('; ');
  }
}

/** A keep-alive client learns that this connection ends with this answer. */
function closeAfterAnswer(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
}
