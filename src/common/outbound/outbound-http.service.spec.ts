import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LookupAddress } from 'node:dns';
import { InMemoryNetwork } from '../../../test/support/in-memory-net';
import type { AppConfig } from '../../config/app-config';
import { OutboundHttp } from './outbound-http.service';
import { OutboundError, type OutboundFailure } from './outbound.types';

/**
 * Outbound HTTP under the policy, through the real undici agent and the service's guarded connector, to
 * destinations served in memory (test/support/in-memory-net.ts: `net.connect` without a socket) and names
 * resolved by the injected resolver. The policy holds where the connection is made: a refused address
 * gets no connection, and a connection that lands on one gets not a byte of the request.
 */
const SHOP = '93.184.216.34';
const NAMES: Record<string, LookupAddress[]> = {
  'shop.example': [{ address: SHOP, family: 4 }],
  'mixed.example': [
    { address: '10.0.0.7', family: 4 },
    { address: '93.184.216.35', family: 4 },
  ],
  'private.example': [{ address: '10.0.0.8', family: 4 }],
  'internal.example': [{ address: '10.0.0.9', family: 4 }],
};
const lookup = async (hostname: string): Promise<LookupAddress[]> => {
  const found = NAMES[hostname];
  if (!found) throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
  return found;
};

const network = new InMemoryNetwork();
/** What each destination received: method, URL, headers and body. */
const received: {
  address: string;
  method?: string;
  url?: string;
  headers: IncomingMessage['headers'];
  body: string;
}[] = [];
let answer: (res: ServerResponse) => void;

function destination(address: string): void {
  network.serve(address, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        address,
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      answer(res);
    });
  });
}

let outbound: OutboundHttp;

beforeAll(() => {
  for (const address of [SHOP, '93.184.216.35', '10.0.0.7', '10.0.0.8', '10.0.0.9']) destination(address);
  network.install();
  outbound = new OutboundHttp(
    { OUTBOUND_ALLOWED_HOSTS: 'internal.example', PROXY_TIMEOUT_MS: 30_000 } as AppConfig,
    lookup,
  );
});
afterAll(async () => {
  await outbound.onModuleDestroy();
  network.uninstall();
});
beforeEach(() => {
  received.length = 0;
  network.connections.length = 0;
  network.landOn = undefined;
  answer = (res) => res.end('ok');
});

/** The failure a send or check ends with (undefined when it succeeds). */
const failureOf = (call: Promise<unknown>): Promise<OutboundFailure | undefined> =>
  call.then(
    () => undefined,
    (error: unknown) => {
      if (error instanceof OutboundError) return error.failure;
      throw error;
    },
  );

describe('send', () => {
  it('sends the method, path, query, headers and body, and buffers the answer', async () => {
    answer = (res) => {
      res.setHeader('Set-Cookie', ['a=1', 'b=2']);
      res.setHeader('X-Answer', 'yes');
      res.statusCode = 201;
      res.end('{"id":"pay_1"}');
    };
    const response = await outbound.send({
      url: 'http://shop.example/pay/now?amount=10',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Trace': ['a', 'b'] },
      body: Buffer.from('{"card":"4242"}'),
    });
    expect(response.status).toBe(201);
    expect(response.body.toString()).toBe('{"id":"pay_1"}');
    expect(response.headers['x-answer']).toBe('yes');
    expect(response.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      address: SHOP,
      method: 'POST',
      url: '/pay/now?amount=10',
      body: '{"card":"4242"}',
    });
    expect(received[0].headers).toMatchObject({
      host: 'shop.example',
      'content-type': 'application/json',
      'x-trace': 'a, b',
      'content-length': '15',
    });
  });

  it('passes on no hop-by-hop header, nor one the Connection header names, nor a Host of its own', async () => {
    answer = (res) => {
      res.setHeader('Connection', 'x-private');
      res.setHeader('X-Private', 'hop');
      res.setHeader('Keep-Alive', 'timeout=5');
      res.end();
    };
    const response = await outbound.send({
      url: 'http://shop.example/',
      method: 'GET',
      headers: {
        Connection: 'x-secret',
        'X-Secret': 'hop',
        'Proxy-Authorization': 'Basic x',
        Host: 'evil.example',
        TE: 'trailers',
      },
    });
    expect(received[0].headers).not.toHaveProperty('x-secret');
    expect(received[0].headers).not.toHaveProperty('proxy-authorization');
    expect(received[0].headers).not.toHaveProperty('te');
    expect(received[0].headers.host).toBe('shop.example');
    expect(response.headers).not.toHaveProperty('x-private');
    expect(response.headers).not.toHaveProperty('keep-alive');
    expect(response.headers).not.toHaveProperty('connection');
  });

  it('returns a redirect, never follows it', async () => {
    answer = (res) => {
      res.statusCode = 302;
      res.setHeader('Location', 'http://10.0.0.8/admin');
      res.end();
    };
    const response = await outbound.send({ url: 'http://shop.example/', method: 'GET', headers: {} });
    expect(response.status).toBe(302);
    expect(response.headers.location).toBe('http://10.0.0.8/admin');
    expect(network.connections).toEqual([SHOP]);
  });

  it('refuses a private address given as a literal, without connecting', async () => {
    expect(await failureOf(outbound.send({ url: 'http://10.0.0.8/', method: 'GET', headers: {} }))).toBe(
      'destination_not_allowed',
    );
    expect(await failureOf(outbound.send({ url: 'http://[::1]/', method: 'GET', headers: {} }))).toBe(
      'destination_not_allowed',
    );
    expect(network.connections).toEqual([]);
  });

  it('refuses a name that resolves only to refused addresses, without connecting', async () => {
    expect(
      await failureOf(outbound.send({ url: 'http://private.example/', method: 'GET', headers: {} })),
    ).toBe('destination_not_allowed');
    expect(network.connections).toEqual([]);
  });

  it('connects a name to its allowed address only, and a listed host to any of its own', async () => {
    await outbound.send({ url: 'http://mixed.example/', method: 'GET', headers: {} });
    await outbound.send({ url: 'http://internal.example/', method: 'GET', headers: {} });
    expect(network.connections).toEqual(['93.184.216.35', '10.0.0.9']);
  });

  it('sends not a byte to a connection that lands on a refused address (DNS rebinding)', async () => {
    network.landOn = '10.0.0.7';
    expect(
      await failureOf(
        outbound.send({
          url: 'http://shop.example/steal',
          method: 'POST',
          headers: {},
          body: Buffer.from('secret'),
        }),
      ),
    ).toBe('destination_not_allowed');
    expect(network.connections).toEqual(['10.0.0.7']);
    expect(received).toEqual([]);
  });

  it('refuses an answer over the cap, declared or streamed', async () => {
    answer = (res) => res.end('x'.repeat(100));
    expect(
      await failureOf(
        outbound.send({ url: 'http://shop.example/', method: 'GET', headers: {}, maxResponseBytes: 99 }),
      ),
    ).toBe('response_too_large');
    answer = (res) => {
      res.write('x'.repeat(60));
      res.end('x'.repeat(60));
    };
    expect(
      await failureOf(
        outbound.send({ url: 'http://shop.example/', method: 'GET', headers: {}, maxResponseBytes: 99 }),
      ),
    ).toBe('response_too_large');
    answer = (res) => res.end('x'.repeat(99));
    const fits = await outbound.send({
      url: 'http://shop.example/',
      method: 'GET',
      headers: {},
      maxResponseBytes: 99,
    });
    expect(fits.body).toHaveLength(99);
  });

  it('is unreachable for a name that does not resolve, or an address nobody answers', async () => {
    expect(
      await failureOf(outbound.send({ url: 'http://nowhere.example/', method: 'GET', headers: {} })),
    ).toBe('unreachable');
    expect(await failureOf(outbound.send({ url: 'http://93.184.216.99/', method: 'GET', headers: {} }))).toBe(
      'unreachable',
    );
  });

  it('refuses what is not an http(s) URL without credentials, and a request HTTP cannot carry', async () => {
    for (const url of ['ftp://shop.example/', 'http://user:pass@shop.example/', 'not a url'])
      expect(await failureOf(outbound.send({ url, method: 'GET', headers: {} }))).toBe('invalid_url');
    expect(
      await failureOf(
        outbound.send({ url: 'http://shop.example/', method: 'GET', headers: { 'x-a': 'b\r\nx-c: d' } }),
      ),
    ).toBe('invalid_request');
    expect(received).toEqual([]);
  });

  it('times out a destination that does not answer, on the clock of the request (no real wait)', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      let arrived!: () => void;
      const reached = new Promise<void>((resolve) => (arrived = resolve));
      answer = () => arrived();
      const sent = failureOf(
        outbound.send({ url: 'http://shop.example/', method: 'GET', headers: {}, timeoutMs: 5_000 }),
      );
      await reached;
      jest.advanceTimersByTime(5_000);
      expect(await sent).toBe('timeout');
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('checkDestination', () => {
  it('accepts an http(s) URL whose host may be reached, or does not resolve now', async () => {
    for (const url of [
      'https://shop.example/hook',
      'http://mixed.example/',
      'https://internal.example/',
      'https://nowhere.example/',
    ])
      expect((await outbound.checkDestination(url)).href).toBe(url);
    expect(network.connections).toEqual([]);
  });

  it('refuses a literal or a name of refused addresses only, and what is not an http(s) URL', async () => {
    expect(await failureOf(outbound.checkDestination('http://127.0.0.1/'))).toBe('destination_not_allowed');
    expect(await failureOf(outbound.checkDestination('https://private.example/'))).toBe(
      'destination_not_allowed',
    );
    expect(await failureOf(outbound.checkDestination('file:///etc/passwd'))).toBe('invalid_url');
  });
});
