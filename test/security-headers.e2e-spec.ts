import request from 'supertest';
import { startApp, TestApp } from './support/app';

describe('security headers and CORS', () => {
  let t: TestApp;
  let cors: TestApp;

  beforeAll(async () => {
    t = await startApp();
    cors = await startApp({ CORS_ORIGINS: 'https://shop.example,https://admin.example' });
  });
  afterAll(async () => {
    await t.close();
    await cors.close();
  });

  it('sends helmet headers and no X-Powered-By', async () => {
    const res = await request(t.http).get('/health/live').expect(200);
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['strict-transport-security']).toMatch(/max-age=/);
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
  });

  it('answers no CORS headers unless CORS_ORIGINS is set', async () => {
    const preflight = await request(t.http)
      .options('/tokenize')
      .set('Origin', 'https://shop.example')
      .set('Access-Control-Request-Method', 'POST');
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    const get = await request(t.http).get('/health/live').set('Origin', 'https://shop.example');
    expect(get.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('allows exactly the configured origins, with the API headers', async () => {
    const ok = await request(cors.http)
      .options('/tokenize')
      .set('Origin', 'https://shop.example')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'bt-api-key,content-type');
    expect(ok.status).toBe(204);
    expect(ok.headers['access-control-allow-origin']).toBe('https://shop.example');
    expect(ok.headers['access-control-allow-headers']).toContain('BT-API-KEY');
    expect(ok.headers['access-control-allow-headers']).toContain('BT-PROXY-URL');
    const refused = await request(cors.http)
      .options('/tokenize')
      .set('Origin', 'https://evil.example')
      .set('Access-Control-Request-Method', 'POST');
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    const exposed = await request(cors.http).get('/health/live').set('Origin', 'https://admin.example');
    expect(exposed.headers['access-control-expose-headers']).toContain('BT-TRACE-ID');
    expect(exposed.headers['access-control-expose-headers']).toContain('BT-PROXY-ERROR');
  });

  it('refuses a malformed CORS_ORIGINS at start, naming it', async () => {
    await expect(startApp({ CORS_ORIGINS: '*' })).rejects.toThrow(/CORS_ORIGINS/);
  });
});
