import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from '../support/app';
import { Destination } from '../support/destination';

/**
 * Abuse class: leaving a pre-configured proxy's base path. A proxy whose `destination_url` is
 * `http://host/base/api` must only ever reach paths under `/base/api`. The URL parser treats `\` as `/`
 * and resolves dot segments, so `/proxy/x\..\..\..\admin` reached `/admin` at the destination while
 * `../` and `%2e%2e` were refused. Every separator or dot segment in any encoding is now a 400 with
 * `BT-PROXY-ERROR: true` and nothing reaches the destination; the URL finally requested is also checked
 * to lie under the base path.
 */
describe('abuse: proxy paths stay under their base', () => {
  let t: TestApp;
  let dest: Destination;
  let tenant: TestTenant;
  let proxyKey: string;
  let pvt: string;
  let port: number;

  beforeAll(async () => {
    dest = await new Destination().start();
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '100000' });
    // Requests are sent with node:http so that their paths reach the server byte for byte (a client
    // library would normalise `\` and dot segments before sending).
    await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', resolve));
    port = (t.http.address() as AddressInfo).port;
    tenant = await newTenant(t, 'paths');
    pvt = (await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:use'] }))
      .key;
    proxyKey = (
      await request(t.http)
        .post('/proxies')
        .set('BT-API-KEY', tenant.managementKey)
        .send({ name: 'base', destination_url: dest.url('/base/api'), require_auth: false })
        .expect(201)
    ).body.key;
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });
  beforeEach(() => dest.reset());

  /** Sends `path` as it is written, with the given headers; resolves with the status, headers and body. */
  const raw = (
    path: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }> =>
    new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, method: 'GET', headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: Record<string, unknown>;
          try {
            body = JSON.parse(text) as Record<string, unknown>;
          } catch {
            body = { text };
          }
          resolve({ status: res.statusCode!, headers: res.headers, body });
        });
      });
      req.on('error', reject);
      req.end();
    });

  const ESCAPES = [
    '/x\\..\\..\\..\\admin',
    '/x\\..\\admin',
    '/x%5C..%5C..%5Cadmin',
    '/x%5c..%5c..%5cadmin',
    '/x%2F..%2F..%2Fadmin',
    '/x%2f..%2f..%2fadmin',
    '/x/../../admin',
    '/..',
    '/.',
    '/x/./admin',
    '/x/%2e%2e/%2e%2e/admin',
    '/x/%2E%2e/%2e%2E/admin',
    '/x/.%2e/.%2E/admin',
    '/x/%2e./admin',
    '/x/%2e/admin',
    '/x/%252e%252e/%252e%252e/admin',
    '/x/%252E%252E/admin',
    '/x%252F..%252F..%252Fadmin',
    '/x%255C..%255Cadmin',
    '/x/%25252e%25252e/admin',
  ];

  it.each(ESCAPES)(
    'refuses %s at a pre-configured proxy: 400, BT-PROXY-ERROR, nothing sent',
    async (path) => {
      const res = await raw(`/proxy${path}`, { 'BT-PROXY-KEY': proxyKey });
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['bt-proxy-error']).toBe('true');
      expect(res.body.errors).toHaveProperty('path');
      expect(dest.received).toEqual([]);
      expect(dest.connections).toBe(0);
    },
  );

  it.each(ESCAPES)('refuses %s at the ephemeral proxy too', async (path) => {
    const res = await raw(`/proxy${path}`, { 'BT-API-KEY': pvt, 'BT-PROXY-URL': dest.url('/base/api') });
    expect(res.status).toBe(400);
    expect(res.headers['bt-proxy-error']).toBe('true');
    expect(dest.received).toEqual([]);
  });

  it('ordinary nested paths, and names merely containing dots, still go under the base', async () => {
    for (const [path, expected] of [
      ['/a/b/c?x=1', '/base/api/a/b/c?x=1'],
      ['', '/base/api'],
      ['/', '/base/api/'],
      ['/v1/file.json', '/base/api/v1/file.json'],
      ['/v1/..hidden/a..b/...', '/base/api/v1/..hidden/a..b/...'],
      ['/v1/a%20b/%41', '/base/api/v1/a%20b/%41'],
      ['/v1//double', '/base/api/v1//double'],
    ]) {
      const res = await raw(`/proxy${path}`, { 'BT-PROXY-KEY': proxyKey });
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(dest.received.at(-1)!.url).toBe(expected);
    }
    expect(dest.received.every((r) => r.url.startsWith('/base/api'))).toBe(true);
  });

  it('a request line the proxy would pass unchecked is never a way out: the problem names the path only', async () => {
    const res = await raw('/proxy/x\\..\\..\\..\\admin?secret=1', { 'BT-PROXY-KEY': proxyKey });
    expectProblem(
      { status: res.status, headers: res.headers, body: res.body } as unknown as request.Response,
      400,
    );
    expect(JSON.stringify(res.body)).not.toContain('secret');
    expect(dest.received).toEqual([]);
  });
});
