import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { newApplication, newTenant, startApp, TestApp, TestTenant } from '../support/app';

const OUR_CSP = "default-src 'none'; frame-ancestors 'none'";

/**
 * Abuse class: a destination speaking under the service's origin. Proxy answers are served from the
 * service's own origin, so a destination that answers `Set-Cookie`, a lax `Content-Security-Policy` and
 * `text/html` could plant cookies on that origin and run script there. The destination's cookies are
 * dropped and every proxy answer (the destination's, and the proxy's own errors) carries the service's
 * `X-Content-Type-Options: nosniff` and `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'`.
 */
describe("abuse: proxy answers keep the service's own headers", () => {
  let t: TestApp;
  let hostile: Server;
  let base: string;
  let tenant: TestTenant;
  let pvt: string;
  let proxyKey: string;

  beforeAll(async () => {
    // A destination that tries to speak as the service: cookies, its own policy, a page with script.
    hostile = createServer((req, res) => {
      const status = req.url!.includes('/error') ? 500 : 200;
      res.writeHead(status, {
        'Content-Type': 'text/html; charset=utf-8',
        'Set-Cookie': ['session=stolen; Path=/; HttpOnly', 'tracker=1; Domain=127.0.0.1'],
        'Content-Security-Policy': "default-src * 'unsafe-inline' 'unsafe-eval'",
        'Content-Security-Policy-Report-Only': "default-src 'self'",
        'X-Content-Type-Options': 'sniff',
        'X-Frame-Options': 'ALLOWALL',
        'X-Kept': 'yes',
      });
      res.end('<html><script>document.title = document.cookie</script></html>');
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '100000' });
    tenant = await newTenant(t, 'answers');
    pvt = (await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:use'] }))
      .key;
    proxyKey = (
      await request(t.http)
        .post('/proxies')
        .set('BT-API-KEY', tenant.managementKey)
        .send({ name: 'hostile', destination_url: `${base}/app`, require_auth: false })
        .expect(201)
    ).body.key;
  });
  afterAll(async () => {
    await t.close();
    hostile.closeAllConnections();
    await new Promise<void>((resolve) => hostile.close(() => resolve()));
  });

  const ours = (res: request.Response) => {
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers['content-security-policy']).toBe(OUR_CSP);
    expect(res.headers['content-security-policy-report-only']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  };

  it("the destination's answer through the ephemeral proxy: no cookie, the service's CSP and nosniff", async () => {
    const res = await request(t.http).get('/proxy/page').set('BT-API-KEY', pvt).set('BT-PROXY-URL', base);
    expect(res.status).toBe(200);
    ours(res);
    // The rest of the answer is the destination's, as it sent it.
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['x-kept']).toBe('yes');
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(res.text).toContain('<script>');
  });

  it("the destination's own error page through a pre-configured proxy gets the same treatment", async () => {
    const res = await request(t.http).post('/proxy/error').set('BT-PROXY-KEY', proxyKey).send('x');
    expect(res.status).toBe(500);
    expect(res.headers['bt-proxy-error']).toBeUndefined();
    ours(res);
  });

  it("the proxy's own errors carry the service's CSP and nosniff", async () => {
    const answers = [
      await request(t.http).get('/proxy').set('BT-PROXY-KEY', 'key_prx_unknown'),
      await request(t.http).get('/proxy').set('BT-API-KEY', pvt),
      await request(t.http).get('/proxy/a/%2e%2e/b').set('BT-PROXY-KEY', proxyKey),
      await request(t.http).get('/proxy').set('BT-API-KEY', pvt).set('BT-PROXY-URL', 'http://127.0.0.1:1/'),
      await request(t.http)
        .post('/proxy')
        .set('BT-PROXY-KEY', proxyKey)
        .set('Content-Type', 'application/octet-stream')
        .send(Buffer.alloc(2 * 1024 * 1024)),
    ];
    expect(answers.map((r) => r.status)).toEqual([404, 400, 400, 502, 413]);
    for (const res of answers) {
      expect(res.headers['bt-proxy-error']).toBe('true');
      ours(res);
    }
  });
});
