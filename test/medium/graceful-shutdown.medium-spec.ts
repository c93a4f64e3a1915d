import { createServer, get, Agent, IncomingMessage, Server, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { GracefulShutdown } from '../../src/common/lifecycle/graceful-shutdown';
import { ShutdownState, StoppableWork } from '../../src/common/lifecycle/shutdown-state';

/**
 * GracefulShutdown on a real HTTP server on 127.0.0.1: what the fake of
 * src/common/lifecycle/graceful-shutdown.spec.ts stands for, on sockets (a connection refused once the
 * listener closes, kept open during the drain delay, an idle keep-alive socket closed, `Connection: close`
 * on the wire, a cut request's connection reset). Here rather than in the quick tier: real sockets and
 * real waits (a loaded machine once failed it there); no database.
 */

/**
 * A server on 127.0.0.1 whose `/slow` answers when `release()` is called and `/hang` never does;
 * `received()` resolves once the server holds a request (not a guess of how long that takes: on a loaded
 * machine a connection still in the listener's backlog when it closes is reset).
 */
async function server(): Promise<{
  server: Server;
  port: number;
  release: () => void;
  received: () => Promise<void>;
}> {
  const waiting: ServerResponse[] = [];
  let arrived: () => void = () => undefined;
  let held = new Promise<void>((resolve) => (arrived = resolve));
  const s = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url!.split('?')[0];
    if (path === '/slow' || path === '/hang') arrived();
    if (path === '/slow') waiting.push(res);
    // Answered a tick later, as the application's handlers do (the shutdown's own listener runs after).
    else if (path !== '/hang') setImmediate(() => res.end('fast'));
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const release = () => waiting.splice(0).forEach((res) => res.end('slow'));
  const received = async () => {
    await held;
    held = new Promise<void>((resolve) => (arrived = resolve));
  };
  return { server: s, port: (s.address() as AddressInfo).port, release, received };
}

function request(port: number, path: string, agent?: Agent) {
  return new Promise<{ status: number; connection?: string; body: string }>((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
    }).on('error', reject);
  });
}

const refused = (port: number) =>
  new Promise<string>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function setup(graceMs: number, work: StoppableWork[] = []) {
  const state = new ShutdownState();
  for (const w of work) state.register(w);
  const lines: string[] = [];
  const close = jest.fn(async () => undefined);
  return { state, lines, close, options: { state, graceMs, close, log: (line: string) => lines.push(line) } };
}

describe('GracefulShutdown', () => {
  it('not ready at once, refuses new connections, lets the request in flight finish, stops jobs, then closes', async () => {
    const { server: s, port, release, received } = await server();
    const deadlines: number[] = [];
    const jobs: StoppableWork = {
      name: 'jobs',
      stop: async (deadline) => {
        deadlines.push(deadline);
        await tick(20);
        return '1 step finished';
      },
    };
    const { state, lines, close, options } = setup(10_000, [jobs]);
    const shutdown = new GracefulShutdown({ server: s, ...options });
    const inFlight = request(port, '/slow');
    await received();

    const startedAt = Date.now();
    const done = shutdown.run('SIGTERM');
    expect(state.ready).toBe(false);
    expect(await refused(port)).toBe('ECONNREFUSED');
    expect(close).not.toHaveBeenCalled();
    release();
    // The answer tells a keep-alive client that the connection ends with it.
    expect(await inFlight).toEqual({ status: 200, connection: 'close', body: 'slow' });
    expect(await done).toBe(0);
    expect(close).toHaveBeenCalledTimes(1);
    // Work must have released what it holds 2 s before the grace runs out.
    expect(deadlines[0]).toBeGreaterThanOrEqual(startedAt + 8_000);
    expect(deadlines[0]).toBeLessThanOrEqual(Date.now() + 8_000);
    expect(lines[0]).toBe('shutdown: SIGTERM: not ready');
    expect(lines[1]).toBe('shutdown: draining 1 request, no new connections (grace 10000 ms)');
    expect(lines.slice(2, 4).sort()).toEqual([
      'shutdown: jobs stopped (jobs: 1 step finished)',
      expect.stringMatching(/^shutdown: requests finished after \d+ ms$/),
    ]);
    expect(lines[4]).toMatch(/^shutdown: closed after \d+ ms$/);
    expect(lines).toHaveLength(5);
  });

  // The delay is long enough for the requests below to be made within it on a loaded machine (with 400 ms,
  // one once arrived after the listener closed).
  it('with a drain delay, goes on accepting and serving, not ready, before it closes its listener', async () => {
    const { server: s, port } = await server();
    const { state, lines, options } = setup(10_000);
    const shutdown = new GracefulShutdown({ server: s, ...options, drainDelayMs: 3_000 });
    const agent = new Agent({ keepAlive: true });
    expect((await request(port, '/fast', agent)).connection).toBe('keep-alive');
    const [idle] = Object.values(agent.freeSockets).flat();
    let idleClosedAt: number | undefined;
    idle!.once('close', () => (idleClosedAt = Date.now()));

    const startedAt = Date.now();
    const done = shutdown.run('SIGTERM');
    expect(state.ready).toBe(false);
    // A new connection during the delay is accepted and answered, and told that it ends with the answer;
    // a keep-alive connection a balancer already holds still carries a request.
    expect(await request(port, '/fast')).toEqual({ status: 200, connection: 'close', body: 'fast' });
    expect(await refused(port)).toBe('connected');
    expect(idleClosedAt).toBeUndefined();
    expect(await request(port, '/fast', agent)).toEqual({ status: 200, connection: 'close', body: 'fast' });
    expect(lines[0]).toBe('shutdown: SIGTERM: not ready, serving for 3000 ms more');
    expect(await done).toBe(0);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(2_990);
    expect(await refused(port)).toBe('ECONNREFUSED');
    expect(lines).toContain('shutdown: draining 0 requests, no new connections (grace 10000 ms)');
    agent.destroy();
  });

  it('a second signal during the drain delay cuts it short', async () => {
    const { server: s, port } = await server();
    const { lines, close, options } = setup(60_000);
    const shutdown = new GracefulShutdown({ server: s, ...options, drainDelayMs: 30_000 });
    const before = process.listeners('SIGUSR2');
    const exited = new Promise<number>((resolve) => shutdown.listen(resolve, ['SIGUSR2']));
    try {
      process.emit('SIGUSR2', 'SIGUSR2');
      await tick(20);
      process.emit('SIGUSR2', 'SIGUSR2');
      expect(await exited).toBe(1);
      expect(lines.at(-1)).toBe('shutdown: second SIGUSR2: cut 0 requests');
      expect(close).not.toHaveBeenCalled();
      expect(await refused(port)).toBe('ECONNREFUSED');
    } finally {
      for (const listener of process.listeners('SIGUSR2'))
        if (!before.includes(listener)) process.removeListener('SIGUSR2', listener);
    }
  });

  it('closes idle keep-alive connections at once', async () => {
    const { server: s, port } = await server();
    const { options } = setup(10_000);
    const shutdown = new GracefulShutdown({ server: s, ...options });
    const agent = new Agent({ keepAlive: true });
    expect((await request(port, '/fast', agent)).connection).toBe('keep-alive');
    const [socket] = Object.values(agent.freeSockets).flat();
    const closed = new Promise((resolve) => socket!.once('close', resolve));
    expect(await shutdown.run('SIGINT')).toBe(0);
    await closed;
    agent.destroy();
  });

  it('cuts what still runs when the grace runs out, names it, and does not close the application', async () => {
    const { server: s, port, received } = await server();
    const stuck: StoppableWork = { name: 'stuck job', stop: () => new Promise(() => undefined) };
    const { lines, close, options } = setup(200, [stuck]);
    const shutdown = new GracefulShutdown({ server: s, ...options });
    const inFlight = request(port, '/hang?secret=1').catch((error: NodeJS.ErrnoException) => error.code);
    await received();
    expect(await shutdown.run('SIGTERM')).toBe(1);
    expect(close).not.toHaveBeenCalled();
    expect(lines.at(-1)).toBe(
      'shutdown: the grace of 200 ms ran out: cut 1 request (GET /hang); jobs still running: stuck job',
    );
    // The connection of the cut request is destroyed.
    expect(await inFlight).toBe('ECONNRESET');
  });

  it('a second signal cuts the shutdown', async () => {
    const { server: s, port, received } = await server();
    const { lines, options } = setup(60_000);
    const shutdown = new GracefulShutdown({ server: s, ...options });
    const inFlight = request(port, '/hang').catch(() => 'cut');
    await received();
    const before = process.listeners('SIGUSR2');
    const codes: number[] = [];
    const exited = new Promise<void>((resolve) =>
      shutdown.listen(
        (code) => {
          codes.push(code);
          resolve();
        },
        ['SIGUSR2'],
      ),
    );
    try {
      process.emit('SIGUSR2', 'SIGUSR2');
      await tick(20);
      expect(lines[0]).toBe('shutdown: SIGUSR2: not ready');
      process.emit('SIGUSR2', 'SIGUSR2');
      await exited;
      expect(codes).toEqual([1]);
      expect(lines.at(-1)).toBe('shutdown: second SIGUSR2: cut 1 request (GET /hang)');
      expect(await inFlight).toBe('cut');
    } finally {
      for (const listener of process.listeners('SIGUSR2'))
        if (!before.includes(listener)) process.removeListener('SIGUSR2', listener);
    }
  });
});
