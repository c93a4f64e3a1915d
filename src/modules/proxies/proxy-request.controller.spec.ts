import { ApiKeyAuthenticator } from '../../common/auth/api-key.guard';
import { controllerApp, ControllerApp, fakeOf } from '../../../test/support/controller-app';
import { ProxyRequestController } from './proxy-request.controller';
import { ProxyRequestService } from './proxy-request.service';

describe('ProxyRequestController', () => {
  const proxy = fakeOf<ProxyRequestService>(['forward']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([ProxyRequestController], [{ provide: ProxyRequestService, useValue: proxy }]);
  });
  afterAll(() => ctx.close());
  beforeEach(() => {
    jest.clearAllMocks();
    proxy.forward.mockResolvedValue({ status: 202, headers: { 'x-answer': 'yes' }, body: Buffer.from('ok') });
  });

  /** What the service was handed by the one request of the test. */
  const forwarded = () => proxy.forward.mock.calls[0][0] as Parameters<ProxyRequestService['forward']>[0];

  it('needs no key: the service decides (it authenticates itself when it must)', async () => {
    expect(ctx.app.get(ApiKeyAuthenticator)).toBeDefined();
    const res = await ctx.http
      .post('/proxy/pay/now?x=1&card={{tok_1}}')
      .set('Content-Type', 'text/plain')
      .set('BT-PROXY-URL', 'https://example.com/base')
      .send('{{ tok_1 }}');
    expect(res.status).toBe(202);
    expect(res.headers['x-answer']).toBe('yes');
    expect(res.headers['bt-proxy-error']).toBeUndefined();
    expect(res.text).toBe('ok');
    expect(proxy.forward).toHaveBeenCalledTimes(1);
    // The method, the path under /proxy, the raw query string and body, and the headers as they came.
    const request = forwarded();
    expect(request).toMatchObject({ method: 'POST', path: '/pay/now', query: 'x=1&card={{tok_1}}' });
    expect(request.body?.toString()).toBe('{{ tok_1 }}');
    expect(request.headers['bt-proxy-url']).toBe('https://example.com/base');
    expect(request.headers['content-type']).toBe('text/plain');
  });

  it('hands the service an empty path and query, and no body, for a bare GET /proxy', async () => {
    await ctx.http.get('/proxy').set('BT-PROXY-KEY', 'proxy-key');
    expect(forwarded()).toMatchObject({ method: 'GET', path: '', query: '', body: undefined });
    expect(forwarded().headers['bt-proxy-key']).toBe('proxy-key');
  });

  it("drops the destination's cookies, BT-* and security headers from the answer", async () => {
    proxy.forward.mockResolvedValueOnce({
      status: 200,
      headers: {
        'set-cookie': ['session=stolen'],
        'bt-trace-id': 'theirs',
        'access-control-allow-origin': '*',
        'x-kept': 'kept',
      },
      body: Buffer.from('{}'),
    });
    const res = await ctx.http.get('/proxy').set('BT-PROXY-KEY', 'proxy-key');
    expect(res.status).toBe(200);
    expect(res.headers['x-kept']).toBe('kept');
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['bt-trace-id']).not.toBe('theirs');
  });

  it('is 401 with BT-PROXY-ERROR for a key given that is not valid, before the service', async () => {
    const res = await ctx.http.get('/proxy').set('BT-API-KEY', `key_pvt_${'x'.repeat(43)}`);
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['bt-proxy-error']).toBe('true');
    expect(proxy.forward).not.toHaveBeenCalled();
  });

  it('reaches the service with a valid key, on every method', async () => {
    const key = ctx.key('private', ['token:use']);
    for (const method of ['get', 'put', 'patch', 'delete'] as const) {
      const res = await ctx.http[method]('/proxy').set('BT-API-KEY', key);
      expect(res.status).toBe(202);
    }
    expect(proxy.forward.mock.calls.map(([request]: [{ method: string }]) => request.method)).toEqual([
      'GET',
      'PUT',
      'PATCH',
      'DELETE',
    ]);
  });

  it("marks the proxy's own errors with BT-PROXY-ERROR", async () => {
    proxy.forward.mockRejectedValueOnce(new Error('boom'));
    const res = await ctx.http.get('/proxy');
    expect(res.status).toBe(500);
    expect(res.headers['bt-proxy-error']).toBe('true');
  });
});
