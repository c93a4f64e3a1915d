import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { createServer, IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { guardedConnector, OutboundHttp, OutboundLookup } from '../src/common/outbound/outbound-http.service';
import { OutboundPolicy } from '../src/common/outbound/outbound-policy';
import { OutboundError, OutboundRequest } from '../src/common/outbound/outbound.types';
import { loadConfig } from '../src/config/load-config';
import { waitFor } from './support/wait';

// The outbound component against real sockets on 127.0.0.1 (no application boot): what reaches a
// destination, what it is refused, and how a bad destination ends.

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

interface TestServer {
  port: number;
  url: string;
  /** TCP connections accepted. */
  connections: number;
  requests: Seen[];
  onSocket(listener: (socket: Socket) => void): void;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

const servers: TestServer[] = [];
const clients: OutboundHttp[] = [];

async function startServer(handler: Handler): Promise<TestServer> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      state.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.on('connection', () => (state.connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const state: TestServer = {
    port,
    url: `http://127.0.0.1:${port}`,
    connections: 0,
    requests: [],
    onSocket: (listener) => server.on('connection', listener),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  servers.push(state);
  return state;
}

function client(env: Record<string, string> = {}, lookup?: OutboundLookup): OutboundHttp {
  const outbound = new OutboundHttp(loadConfig({ NODE_ENV: 'test', ...env }), lookup);
  clients.push(outbound);
  return outbound;
}

/** A resolver that knows the test names only (no real DNS). */
function fakeDns(names: Record<string, string[] | (() => string[])>): OutboundLookup {
  return (hostname) => {
    const entry = names[hostname.toLowerCase()];
    if (entry === undefined) {
      return Promise.reject(
        Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }),
      );
    }
    const addresses = typeof entry === 'function' ? entry() : entry;
    return Promise.resolve(
      addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };
}

async function failureOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'no failure';
  } catch (error) {
    if (error instanceof OutboundError) return error.failure;
    return `not an OutboundError: ${String(error)}`;
  }
}

async function errorOf(promise: Promise<unknown>): Promise<OutboundError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OutboundError) return error;
    throw error;
  }
  throw new Error('no failure');
}

const get = (url: string, extra: Partial<OutboundRequest> = {}): OutboundRequest => ({
  url,
  method: 'GET',
  headers: {},
  ...extra,
});

const hello: Handler = (_req, res) => res.end('hello');

/**
 * Writes `total` bytes in 64 KiB chunks, waiting for the socket to drain; with `pauseAt`, stops at that
 * many bytes for `pauseMs` first. Resolves how much was written when the connection closed.
 */
function stream(
  res: ServerResponse,
  pauseAt: number,
  total = pauseAt,
  pauseMs = 0,
): Promise<{ written: number; finished: boolean }> {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let written = 0;
  let paused: NodeJS.Timeout | undefined;
  return new Promise((resolve) => {
    res.on('close', () => {
      clearTimeout(paused);
      resolve({ written, finished: res.writableFinished });
    });
    const pump = (): void => {
      while (written < total) {
        if (written === pauseAt && paused === undefined) return void (paused = setTimeout(pump, pauseMs));
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.onModuleDestroy()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('outbound policy on real connections', () => {
  it('refuses a loopback destination without an allow-list, and the server sees no connection', async () => {
    const server = await startServer(hello);
    const outbound = client();
    for (const url of [
      `${server.url}/x`,
      `http://localhost:${server.port}/`,
      `http://2130706433:${server.port}/`,
      `http://0x7f000001:${server.port}/`,
      `http://127.1:${server.port}/`,
      `http://[::ffff:127.0.0.1]:${server.port}/`,
    ]) {
      expect([url, await failureOf(outbound.send(get(url)))]).toEqual([url, 'destination_not_allowed']);
    }
    expect(server.connections).toBe(0);
  });

  it('says nothing of the address, path or query in the refusal', async () => {
    const server = await startServer(hello);
    const error = await errorOf(client().send(get(`${server.url}/secret-path?card=4242`)));
    expect(error.message).not.toMatch(/127|secret|4242|card/);
  });

  it('lets an address listed in OUTBOUND_ALLOWED_HOSTS through, alone or in a CIDR range', async () => {
    const server = await startServer(hello);
    for (const allowed of ['127.0.0.1', '127.0.0.0/8', '::ffff:127.0.0.1']) {
      const response = await client({ OUTBOUND_ALLOWED_HOSTS: allowed }).send(get(`${server.url}/`));
      expect([allowed, response.status, response.body.toString()]).toEqual([allowed, 200, 'hello']);
    }
    const numeric = await client({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.0/8' }).send(
      get(`http://2130706433:${server.port}/n`),
    );
    expect(numeric.status).toBe(200);
    expect(server.requests.map((r) => r.url)).toEqual(['/', '/', '/', '/n']);
  });

  it('lets a listed host name through whatever it resolves to, and only that name', async () => {
    const server = await startServer(hello);
    const dns = fakeDns({ 'echo.test': ['127.0.0.1'], 'other.test': ['127.0.0.1'] });
    const outbound = client({ OUTBOUND_ALLOWED_HOSTS: 'Echo.Test' }, dns);
    const response = await outbound.send(get(`http://ECHO.test:${server.port}/a?b=c`));
    expect(response.status).toBe(200);
    expect(server.requests[0].url).toBe('/a?b=c');
    expect(server.requests[0].headers.host).toBe(`echo.test:${server.port}`);
    expect(await failureOf(outbound.send(get(`http://other.test:${server.port}/`)))).toBe(
      'destination_not_allowed',
    );
    expect(await failureOf(client({}, dns).send(get(`http://echo.test:${server.port}/`)))).toBe(
      'destination_not_allowed',
    );
    expect(server.connections).toBe(1);
  });

  it('keeps only the allowed addresses of a name that has both kinds', async () => {
    const server = await startServer(hello);
    // 10.255.255.1 is private and not listed: never tried; 127.0.0.1 is listed.
    const dns = fakeDns({ 'mixed.test': ['10.255.255.1', '127.0.0.1'] });
    const response = await client({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' }, dns).send(
      get(`http://mixed.test:${server.port}/`),
    );
    expect(response.status).toBe(200);
  });

  it('refuses DNS rebinding: a name public when checked and loopback when used gets no connection', async () => {
    const server = await startServer(hello);
    let answers = 0;
    const dns = fakeDns({ 'rebind.test': () => (answers++ === 0 ? ['93.184.215.14'] : ['127.0.0.1']) });
    const outbound = client({}, dns);
    const url = `http://rebind.test:${server.port}/`;
    await expect(outbound.checkDestination(url)).resolves.toBeInstanceOf(URL);
    expect(await failureOf(outbound.send(get(url)))).toBe('destination_not_allowed');
    expect(answers).toBe(2);
    expect(server.connections).toBe(0);
  });

  it('judges the address actually connected: a connection that lands on loopback gets no request bytes', async () => {
    const server = await startServer(hello);
    let bytes = 0;
    let closed = false;
    server.onSocket((socket) => {
      socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
      socket.on('close', () => (closed = true));
    });
    // A resolver that says one thing and connects elsewhere: the name lands on 127.0.0.1.
    const plain = buildConnector({});
    const liar: buildConnector.connector = (options, callback) =>
      plain({ ...options, hostname: '127.0.0.1' }, callback);
    const agent = new Agent({ connect: guardedConnector(new OutboundPolicy(), liar) });
    try {
      const error = await agent
        .request({ origin: `http://public.test:${server.port}`, path: '/', method: 'GET' })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(OutboundError);
      expect((error as OutboundError).failure).toBe('destination_not_allowed');
      // The guard closes the connection it refused: once the server has seen it closed, every byte the
      // client sent on it has arrived.
      await waitFor(() => closed, { what: 'the refused connection closed' });
      expect(server.connections).toBe(1);
      expect(bytes).toBe(0);
      expect(server.requests).toHaveLength(0);
    } finally {
      await agent.destroy();
    }
  });

  it('checks a configured destination: scheme, credentials, literal addresses and resolved names', async () => {
    const dns = fakeDns({ 'public.test': ['8.8.8.8'], 'internal.test': ['10.0.0.5', 'fd00::5'] });
    const outbound = client({}, dns);
    await expect(outbound.checkDestination('https://public.test/hook')).resolves.toBeInstanceOf(URL);
    await expect(outbound.checkDestination('https://8.8.8.8/')).resolves.toBeInstanceOf(URL);
    // Not resolvable now: accepted, judged again at every connection.
    await expect(outbound.checkDestination('https://unknown.test/')).resolves.toBeInstanceOf(URL);
    for (const [url, failure] of [
      ['https://internal.test/', 'destination_not_allowed'],
      ['http://169.254.169.254/latest/meta-data/', 'destination_not_allowed'],
      ['http://[::1]/', 'destination_not_allowed'],
      ['http://0x7f000001/', 'destination_not_allowed'],
      ['ftp://public.test/', 'invalid_url'],
      ['file:///etc/passwd', 'invalid_url'],
      ['https://user:pass@public.test/', 'invalid_url'],
      ['not a url', 'invalid_url'],
    ]) {
      expect([url, await failureOf(outbound.checkDestination(url))]).toEqual([url, failure]);
    }
    const listed = client({ OUTBOUND_ALLOWED_HOSTS: 'internal.test,10.0.0.0/8' }, dns);
    await expect(listed.checkDestination('https://internal.test/')).resolves.toBeInstanceOf(URL);
    await expect(listed.checkDestination('http://10.1.1.1/')).resolves.toBeInstanceOf(URL);
  });

  it('refuses a URL that is not http(s) or carries credentials, before anything is sent', async () => {
    const server = await startServer(hello);
    const outbound = client({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
    expect(await failureOf(outbound.send(get(`ftp://127.0.0.1:${server.port}/`)))).toBe('invalid_url');
    expect(await failureOf(outbound.send(get(`http://u:p@127.0.0.1:${server.port}/`)))).toBe('invalid_url');
    expect(server.connections).toBe(0);
  });
});

describe('outbound failures', () => {
  const allowLoopback = { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' };

  it('times out when the destination never answers', async () => {
    const server = await startServer(() => undefined);
    // The request's 200 ms, not PROXY_TIMEOUT_MS: that is set at ten minutes, so that a time-out that
    // ignored the request's would outlast the test (no bound on elapsed time, which a loaded machine moves).
    const outbound = client({ ...allowLoopback, PROXY_TIMEOUT_MS: '600000' });
    const error = await errorOf(outbound.send(get(`${server.url}/`, { timeoutMs: 200 })));
    expect(error.failure).toBe('timeout');
  });

  it('times out when the body stops half-way (the time-out runs to the last byte)', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-length': '10' });
      res.write('12345');
    });
    expect(await failureOf(client(allowLoopback).send(get(`${server.url}/`, { timeoutMs: 300 })))).toBe(
      'timeout',
    );
  });

  it('uses PROXY_TIMEOUT_MS when the request names no time-out', async () => {
    const server = await startServer(() => undefined);
    const outbound = client({ ...allowLoopback, PROXY_TIMEOUT_MS: '150' });
    expect(await failureOf(outbound.send(get(`${server.url}/`)))).toBe('timeout');
  });

  it('refuses an answer over 10 MiB (11 MiB streamed) as soon as the cap is passed', async () => {
    let outcome: Promise<{ written: number; finished: boolean }> | undefined;
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      // Just past the cap, then a pause before the last MiB: the client must not wait for it. The
      // answer shows it did not (the server never wrote the rest, the client having closed first);
      // the pause is long so that a loaded machine's slow read of the first 10 MiB never outlasts it.
      outcome = stream(res, 10 * 1024 * 1024 + 64 * 1024, 11 * 1024 * 1024, 20_000);
    });
    const error = await errorOf(client(allowLoopback).send(get(`${server.url}/`)));
    expect(error.failure).toBe('response_too_large');
    expect(error.message).toContain(String(10 * 1024 * 1024));
    expect(await outcome).toEqual({ written: 10 * 1024 * 1024 + 64 * 1024, finished: false });
  });

  it('stops downloading as soon as the cap is passed', async () => {
    let outcome: Promise<{ written: number; finished: boolean }> | undefined;
    const server = await startServer((_req, res) => {
      res.writeHead(200);
      outcome = stream(res, 512 * 1024 * 1024);
    });
    expect(await failureOf(client(allowLoopback).send(get(`${server.url}/`)))).toBe('response_too_large');
    const { written, finished } = await outcome!;
    expect(finished).toBe(false);
    // 10 MiB read, plus what the socket buffers held when the connection was closed.
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('fails at once on a Content-Length over the cap, without reading the body', async () => {
    let outcome: Promise<{ written: number; finished: boolean }> | undefined;
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(11 * 1024 * 1024) });
      res.write(Buffer.alloc(1024));
      // The rest comes slowly, if ever: the client must not wait for it.
      outcome = new Promise((resolve) => res.on('close', () => resolve({ written: 1024, finished: false })));
    });
    // The rest never comes: a client that read on would fail with `timeout`, so `response_too_large`
    // shows it failed on the header alone (no bound on elapsed time, which a loaded machine moves).
    expect(await failureOf(client(allowLoopback).send(get(`${server.url}/`, { timeoutMs: 5000 })))).toBe(
      'response_too_large',
    );
    await outcome; // the connection was closed
  });

  it('honours a smaller cap given with the request, the cap itself included', async () => {
    const server = await startServer((req, res) => res.end(Buffer.alloc(Number(req.url!.slice(1)))));
    const outbound = client(allowLoopback);
    const ok = await outbound.send(get(`${server.url}/1000`, { maxResponseBytes: 1000 }));
    expect(ok.body.length).toBe(1000);
    expect(await failureOf(outbound.send(get(`${server.url}/1001`, { maxResponseBytes: 1000 })))).toBe(
      'response_too_large',
    );
  });

  it('reports a closed port, an unknown name and a failed TLS handshake as unreachable', async () => {
    const closed = await startServer(hello);
    const port = closed.port;
    await closed.close();
    servers.splice(servers.indexOf(closed), 1);
    const dns = fakeDns({});
    const outbound = client({ ...allowLoopback, OUTBOUND_ALLOWED_HOSTS: '127.0.0.1,nowhere.test' }, dns);
    expect(await failureOf(outbound.send(get(`http://127.0.0.1:${port}/`)))).toBe('unreachable');
    expect(await failureOf(outbound.send(get(`http://nowhere.test:${port}/`)))).toBe('unreachable');
    const plain = await startServer(hello); // speaks HTTP, not TLS
    expect(await failureOf(outbound.send(get(`https://127.0.0.1:${plain.port}/`)))).toBe('unreachable');
  });

  it('refuses a header value HTTP cannot carry, and sends nothing', async () => {
    const server = await startServer(hello);
    const request = get(`${server.url}/`, { headers: { 'x-injected': 'a\r\nx-evil: 1' } });
    expect(await failureOf(client(allowLoopback).send(request))).toBe('invalid_request');
    expect(server.requests).toHaveLength(0);
  });
});

describe('what passes through', () => {
  const allowLoopback = { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' };

  it('returns a redirect as it is, without following it', async () => {
    const server = await startServer((req, res) => {
      if (req.url === '/from') res.writeHead(302, { location: '/to' }).end();
      else res.end('followed');
    });
    const response = await client(allowLoopback).send(get(`${server.url}/from`));
    expect(response.status).toBe(302);
    expect(response.headers.location).toBe('/to');
    expect(server.requests.map((r) => r.url)).toEqual(['/from']);
  });

  it('drops hop-by-hop headers both ways and keeps multi-valued ones as arrays', async () => {
    const server = await startServer((_req, res) => {
      res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; Path=/']);
      res.setHeader('x-kept', 'yes');
      res.setHeader('connection', 'keep-alive, x-hop');
      res.setHeader('x-hop', 'connection-scoped');
      res.setHeader('keep-alive', 'timeout=5');
      res.setHeader('proxy-authenticate', 'Basic realm="x"');
      res.setHeader('trailer', 'x-checksum');
      res.end('done');
    });
    const response = await client(allowLoopback).send(
      get(`${server.url}/`, {
        method: 'POST',
        headers: {
          Connection: 'X-Drop-Me',
          'X-Drop-Me': 'connection-scoped',
          'Keep-Alive': 'timeout=5',
          'Proxy-Authorization': 'Basic eDp5',
          'Proxy-Connection': 'keep-alive',
          TE: 'trailers',
          Trailer: 'x-checksum',
          Upgrade: 'h2c',
          'Transfer-Encoding': 'chunked',
          Host: 'evil.example',
          'Content-Length': '999',
          Expect: '100-continue',
          'X-Kept': 'yes',
          'X-Many': ['1', '2'],
          'content-type': 'text/plain',
        },
        body: Buffer.from('payload'),
      }),
    );
    const seen = server.requests[0].headers;
    for (const name of [
      'x-drop-me',
      'keep-alive',
      'proxy-authorization',
      'proxy-connection',
      'te',
      'trailer',
      'upgrade',
      'transfer-encoding',
      'expect',
    ]) {
      expect([name, seen[name]]).toEqual([name, undefined]);
    }
    expect(seen.connection ?? 'keep-alive').toBe('keep-alive'); // undici's own, not ours
    expect(seen.host).toBe(`127.0.0.1:${server.port}`);
    expect(seen['content-length']).toBe('7');
    expect(seen['x-kept']).toBe('yes');
    expect(seen['x-many']).toBe('1, 2');
    expect(server.requests[0].body.toString()).toBe('payload');

    expect(response.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    expect(response.headers['x-kept']).toBe('yes');
    for (const name of [
      'connection',
      'x-hop',
      'keep-alive',
      'proxy-authenticate',
      'trailer',
      'transfer-encoding',
    ]) {
      expect([name, response.headers[name]]).toEqual([name, undefined]);
    }
    expect(response.body.toString()).toBe('done');
  });

  it('passes a binary body through byte for byte, with any method, bodies on GET and DELETE too', async () => {
    const server = await startServer((req, res, body) => {
      res.writeHead(201, { 'content-type': 'application/octet-stream', 'x-method': req.method });
      res.end(body);
    });
    const outbound = client(allowLoopback);
    const payload = randomBytes(300 * 1024);
    for (const method of ['POST', 'PUT', 'PATCH', 'GET', 'DELETE', 'PURGE']) {
      const response = await outbound.send({
        url: `${server.url}/echo?q=1`,
        method,
        headers: { 'content-type': 'application/octet-stream' },
        body: payload,
      });
      expect([method, response.status, response.headers['x-method']]).toEqual([method, 201, method]);
      expect(response.body.equals(payload)).toBe(true);
    }
    expect(server.requests.map((r) => [r.method, r.body.equals(payload)])).toEqual(
      ['POST', 'PUT', 'PATCH', 'GET', 'DELETE', 'PURGE'].map((m) => [m, true]),
    );
  });

  it('returns a HEAD answer and an empty body', async () => {
    const server = await startServer((_req, res) => res.writeHead(204).end());
    const outbound = client(allowLoopback);
    const response = await outbound.send(get(`${server.url}/`, { method: 'HEAD' }));
    expect(response.status).toBe(204);
    expect(response.body.length).toBe(0);
  });
});
