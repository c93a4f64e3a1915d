import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import { GracefulShutdown } from './graceful-shutdown';
import { ShutdownState, StoppableWork } from './shutdown-state';

/**
 * The shutdown's phases against a fake HTTP server, on Jest's fake clock: no socket and no real time, so
 * each phase is checked at the millisecond it is due. What the fake stands for (a refused connection, a
 * keep-alive socket closed, `Connection: close` on the wire) is checked with real sockets in
 * test/medium/graceful-shutdown.medium-spec.ts.
 */

/** A client connection: idle between requests, busy while an answer is owed on it. */
class FakeConnection {
  closed = false;
  answering?: FakeResponse;
}

/** What the shutdown uses of a response: its headers before they are sent, and its `close` event. */
class FakeResponse extends EventEmitter {
  headersSent = false;
  body?: string;
  readonly headers = new Map<string, string>();

  constructor(readonly connection: FakeConnection) {
    super();
  }

  setHeader(name: string, value: string): void {
    if (this.headersSent) throw new Error('headers already sent');
    this.headers.set(name.toLowerCase(), value);
  }

  /** Answers, then frees the connection, or closes it when the answer says so (as Node's server does). */
  end(body: string): void {
    this.headersSent = true;
    this.body = body;
    this.connection.answering = undefined;
    if (this.headers.get('connection') === 'close') this.connection.closed = true;
    this.emit('close');
  }

  /** The connection is destroyed before the answer: Node tells its response on a later turn. */
  cut(): void {
    this.connection.answering = undefined;
    this.connection.closed = true;
    setImmediate(() => this.emit('close'));
  }
}

/**
 * What the shutdown uses of a node:http Server: `close` (the listener closes; the callback once no
 * connection is left), `closeIdleConnections`, `closeAllConnections`, and the `request` event.
 */
class FakeServer extends EventEmitter {
  listening = true;
  readonly connections: FakeConnection[] = [];
  idleSweeps = 0;
  private onClosed: (() => void)[] = [];

  /** A new connection: refused once the listener is closed. */
  connect(): FakeConnection {
    if (!this.listening) throw new Error('ECONNREFUSED');
    const connection = new FakeConnection();
    this.connections.push(connection);
    return connection;
  }

  /** A request on `connection` (a new one by default); its response, answered by the test. */
  request(path: string, connection = this.connect()): FakeResponse {
    if (connection.closed) throw new Error('the connection is closed');
    const res = new FakeResponse(connection);
    connection.answering = res;
    res.once('close', () => this.settle());
    this.emit('request', { method: 'GET', url: path }, res);
    return res;
  }

  close(callback?: () => void): void {
    this.listening = false;
    if (callback) this.onClosed.push(callback);
    this.settle();
  }

  closeIdleConnections(): void {
    this.idleSweeps++;
    for (const c of this.connections) if (!c.answering) c.closed = true;
    this.settle();
  }

  closeAllConnections(): void {
    for (const c of this.connections) c.answering?.cut();
    for (const c of this.connections) c.closed = true;
    // Destroyed sockets close on a later turn: the shutdown has said what it cut, and exited, before.
    setImmediate(() => this.settle());
  }

  /** Node calls back `close` once the listener is closed and no connection is left. */
  private settle(): void {
    if (this.listening || this.connections.some((c) => !c.closed)) return;
    for (const callback of this.onClosed.splice(0)) callback();
  }
}

const START = Date.parse('2026-11-28T12:00:00.000Z');

function setup(graceMs: number, options: { work?: StoppableWork[]; drainDelayMs?: number } = {}) {
  const server = new FakeServer();
  const state = new ShutdownState();
  for (const w of options.work ?? []) state.register(w);
  const lines: string[] = [];
  const close = jest.fn(async () => undefined);
  const shutdown = new GracefulShutdown({
    server: server as unknown as Server,
    state,
    graceMs,
    drainDelayMs: options.drainDelayMs,
    close,
    log: (line) => lines.push(line),
  });
  return { server, state, lines, close, shutdown };
}

/** A job that stops when the test says so, and the deadline it was given. */
function job(name: string) {
  const deadlines: number[] = [];
  let finish: (account: string) => void = () => undefined;
  const work: StoppableWork = {
    name,
    stop: (deadline) => {
      deadlines.push(deadline);
      return new Promise<string>((resolve) => (finish = resolve));
    },
  };
  return { work, deadlines, finish: (account: string) => finish(account) };
}

/** Lets the shutdown's promises settle without moving the clock. */
const settle = () => jest.advanceTimersByTimeAsync(0);

/**
 * Listens on SIGUSR2 (nothing else in the process does) and removes what it added afterwards. Each exit
 * keeps its code and the last line written before it: the process ends there.
 */
function onSignal(shutdown: GracefulShutdown, lines: string[]) {
  const before = process.listeners('SIGUSR2');
  const exits: { code: number; lastLine?: string }[] = [];
  shutdown.listen((code) => exits.push({ code, lastLine: lines.at(-1) }), ['SIGUSR2']);
  return {
    exits,
    signal: () => process.emit('SIGUSR2', 'SIGUSR2'),
    remove: () => {
      for (const listener of process.listeners('SIGUSR2'))
        if (!before.includes(listener)) process.removeListener('SIGUSR2', listener);
    },
  };
}

describe('GracefulShutdown', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: START });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('not ready at once, closes the listener and idle connections, lets the request in flight finish, stops jobs, then closes', async () => {
    const jobs = job('jobs');
    const { server, state, lines, close, shutdown } = setup(10_000, { work: [jobs.work] });
    const idle = server.connect();
    const inFlight = server.request('/slow?card=4242');

    let code: number | undefined;
    void shutdown.run('SIGTERM').then((c) => (code = c));
    expect(state.ready).toBe(false);
    expect(server.listening).toBe(false);
    expect(() => server.connect()).toThrow('ECONNREFUSED');
    expect(idle.closed).toBe(true);
    expect(inFlight.connection.closed).toBe(false);
    // The answer tells a keep-alive client that the connection ends with it.
    expect(inFlight.headers.get('connection')).toBe('close');
    // Work must have released what it holds 2 s before the grace runs out.
    expect(jobs.deadlines).toEqual([START + 8_000]);

    await jest.advanceTimersByTimeAsync(300);
    inFlight.end('slow');
    expect(inFlight.connection.closed).toBe(true);
    await jest.advanceTimersByTimeAsync(200);
    expect(close).not.toHaveBeenCalled();
    jobs.finish('1 step finished');
    await settle();

    expect(close).toHaveBeenCalledTimes(1);
    expect(code).toBe(0);
    expect(lines).toEqual([
      'shutdown: SIGTERM: not ready',
      'shutdown: draining 1 request, no new connections (grace 10000 ms)',
      'shutdown: requests finished after 300 ms',
      'shutdown: jobs stopped (jobs: 1 step finished)',
      'shutdown: closed after 500 ms',
    ]);
  });

  it('with a drain delay, goes on accepting and serving, not ready, then closes its listener', async () => {
    const { server, state, lines, close, shutdown } = setup(10_000, { drainDelayMs: 400 });
    // A keep-alive connection a balancer holds, idle.
    const held = server.connect();

    let code: number | undefined;
    void shutdown.run('SIGTERM').then((c) => (code = c));
    expect(state.ready).toBe(false);
    expect(lines).toEqual(['shutdown: SIGTERM: not ready, serving for 400 ms more']);

    // A new connection during the delay is accepted and answered, and told that it ends with the answer;
    // the held connection is left open, and still carries a request.
    await jest.advanceTimersByTimeAsync(100);
    const fresh = server.request('/fast');
    expect(fresh.headers.get('connection')).toBe('close');
    fresh.end('fast');
    expect(fresh.connection.closed).toBe(true);
    expect(held.closed).toBe(false);
    const onHeld = server.request('/fast', held);
    expect(onHeld.headers.get('connection')).toBe('close');
    onHeld.end('fast');
    expect(server.idleSweeps).toBe(0);

    await jest.advanceTimersByTimeAsync(299);
    expect(server.listening).toBe(true);
    expect(() => server.connect()).not.toThrow();
    expect(close).not.toHaveBeenCalled();

    await jest.advanceTimersByTimeAsync(1);
    expect(server.listening).toBe(false);
    expect(() => server.connect()).toThrow('ECONNREFUSED');
    expect(code).toBe(0);
    expect(close).toHaveBeenCalledTimes(1);
    expect(lines).toEqual([
      'shutdown: SIGTERM: not ready, serving for 400 ms more',
      // No job to stop: stopped at once, during the delay.
      'shutdown: jobs stopped',
      'shutdown: draining 0 requests, no new connections (grace 10000 ms)',
      'shutdown: requests finished after 400 ms',
      'shutdown: closed after 400 ms',
    ]);
  });

  it('a request answered after the drain delay is drained like any other', async () => {
    const { server, lines, close, shutdown } = setup(10_000, { drainDelayMs: 400 });
    let code: number | undefined;
    void shutdown.run('SIGTERM').then((c) => (code = c));
    await jest.advanceTimersByTimeAsync(100);
    const slow = server.request('/slow');

    await jest.advanceTimersByTimeAsync(300);
    expect(server.listening).toBe(false);
    expect(lines.at(-1)).toBe('shutdown: draining 1 request, no new connections (grace 10000 ms)');
    expect(close).not.toHaveBeenCalled();

    await jest.advanceTimersByTimeAsync(250);
    slow.end('slow');
    expect(slow.headers.get('connection')).toBe('close');
    await settle();
    expect(code).toBe(0);
    expect(lines.slice(-2)).toEqual([
      'shutdown: requests finished after 650 ms',
      'shutdown: closed after 650 ms',
    ]);
  });

  it('does not delay beyond the grace', async () => {
    const { lines, shutdown } = setup(1_000, { drainDelayMs: 30_000 });
    let code: number | undefined;
    void shutdown.run('SIGTERM').then((c) => (code = c));
    expect(lines).toEqual(['shutdown: SIGTERM: not ready, serving for 1000 ms more']);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(code).toBeDefined();
  });

  it('a second signal during the drain delay cuts it short', async () => {
    const { server, lines, close, shutdown } = setup(60_000, { drainDelayMs: 30_000 });
    const held = server.connect();
    const signals = onSignal(shutdown, lines);
    try {
      signals.signal();
      await jest.advanceTimersByTimeAsync(20);
      expect(server.listening).toBe(true);
      signals.signal();
      await settle();
      expect(signals.exits).toEqual([{ code: 1, lastLine: 'shutdown: second SIGUSR2: cut 0 requests' }]);
      expect(close).not.toHaveBeenCalled();
      expect(server.listening).toBe(false);
      expect(held.closed).toBe(true);
    } finally {
      signals.remove();
    }
  });

  it('closes connections left idle while draining, every 50 ms, and stops when done', async () => {
    const { server, close, shutdown } = setup(10_000);
    const slow = server.request('/slow');
    const done = shutdown.run('SIGINT');
    expect(server.idleSweeps).toBe(1);
    await jest.advanceTimersByTimeAsync(49);
    expect(server.idleSweeps).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(server.idleSweeps).toBe(2);
    await jest.advanceTimersByTimeAsync(100);
    expect(server.idleSweeps).toBe(4);
    slow.end('slow');
    expect(await done).toBe(0);
    expect(close).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(500);
    expect(server.idleSweeps).toBe(4);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('cuts what still runs when the grace runs out, names it, and does not close the application', async () => {
    const stuck = job('stuck job');
    const { server, lines, close, shutdown } = setup(200, { work: [stuck.work] });
    // A quarter of a short grace is kept for releasing, rather than 2 s.
    const hang = server.request('/hang?secret=1');
    let code: number | undefined;
    let lastLine: string | undefined;
    void shutdown.run('SIGTERM').then((c) => {
      code = c;
      // The process exits with the code: what comes after is not written.
      lastLine = lines.at(-1);
    });
    expect(stuck.deadlines).toEqual([START + 150]);

    await jest.advanceTimersByTimeAsync(199);
    expect(code).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    expect(code).toBe(1);
    expect(close).not.toHaveBeenCalled();
    expect(lastLine).toBe(
      'shutdown: the grace of 200 ms ran out: cut 1 request (GET /hang); jobs still running: stuck job',
    );
    // The connection of the cut request is destroyed.
    expect(hang.connection.closed).toBe(true);
    expect(hang.body).toBeUndefined();
    // Nothing of the shutdown's is left to fire (the grace's timer, the idle sweep).
    const sweeps = server.idleSweeps;
    await jest.advanceTimersByTimeAsync(10_000);
    expect(server.idleSweeps).toBe(sweeps);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('names at most five requests it cuts', async () => {
    const { server, lines, shutdown } = setup(100);
    for (let i = 1; i <= 6; i++) server.request(`/hang/${i}`);
    const done = shutdown.run('SIGTERM').then((code) => ({ code, lastLine: lines.at(-1) }));
    await jest.advanceTimersByTimeAsync(100);
    expect(await done).toEqual({
      code: 1,
      lastLine:
        'shutdown: the grace of 100 ms ran out: cut 6 requests (GET /hang/1, GET /hang/2, GET /hang/3, GET /hang/4, GET /hang/5, ...)',
    });
  });

  it('a second signal cuts the shutdown', async () => {
    const { server, lines, shutdown } = setup(60_000);
    const hang = server.request('/hang');
    const signals = onSignal(shutdown, lines);
    try {
      signals.signal();
      await jest.advanceTimersByTimeAsync(20);
      expect(lines[0]).toBe('shutdown: SIGUSR2: not ready');
      signals.signal();
      await settle();
      expect(signals.exits).toEqual([
        { code: 1, lastLine: 'shutdown: second SIGUSR2: cut 1 request (GET /hang)' },
      ]);
      expect(hang.connection.closed).toBe(true);
    } finally {
      signals.remove();
    }
  });

  it('says when the application could not close, and exits 1', async () => {
    const { lines, close, shutdown } = setup(10_000);
    close.mockRejectedValueOnce(new Error('pool busy'));
    expect(await shutdown.run('SIGTERM')).toBe(1);
    expect(lines.at(-1)).toBe('shutdown: could not close: pool busy');
  });

  it('runs once', async () => {
    const { shutdown } = setup(10_000);
    await shutdown.run('SIGTERM');
    await expect(shutdown.run('SIGTERM')).rejects.toThrow('the shutdown has already begun');
  });
});
