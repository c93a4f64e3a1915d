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

  it('needs no key: the service decides (it authenticates itself when it must)', async () => {
    expect(ctx.app.get(ApiKeyAuthenticator)).toBeDefined();
    const res = await ctx.http.post('/proxy/pay?x=1').set('Content-Type', 'text/plain').send('body');
    expect(res.status).toBe(202);
    expect(res.headers['x-answer']).toBe('yes');
    expect(res.headers['bt-proxy-error']).toBeUndefined();
    expect(proxy.forward).toHaveBeenCalledTimes(1);
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
    expect(proxy.forward).toHaveBeenCalledTimes(4);
  });

  it("marks the proxy's own errors with BT-PROXY-ERROR", async () => {
    proxy.forward.mockRejectedValueOnce(new Error('boom'));
    const res = await ctx.http.get('/proxy');
    expect(res.status).toBe(500);
    expect(res.headers['bt-proxy-error']).toBe('true');
  });
});
