import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../test/support/controller-app';
import { ProxiesController } from './proxies.controller';
import { ProxiesService } from './proxies.service';

describe('ProxiesController', () => {
  const proxies = fakeOf<ProxiesService>(['create', 'list', 'get', 'update', 'delete']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([ProxiesController], [{ provide: ProxiesService, useValue: proxies }]);
  });
  afterAll(() => ctx.close());

  const proxy = { name: 'shop', destination_url: 'https://example.com/pay' };
  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: '/proxies',
        kind: 'management',
        permissions: ['proxy:create'],
        body: proxy,
        invalid: { body: { ...proxy, destination_url: 5 }, field: 'destination_url' },
        reaches: () => proxies.create,
      },
      {
        method: 'get',
        path: '/proxies',
        kind: 'management',
        permissions: ['proxy:read'],
        invalid: { query: { id: 'not-a-uuid' }, field: 'id' },
        reaches: () => proxies.list,
      },
      {
        method: 'get',
        path: `/proxies/${ID}`,
        kind: 'management',
        permissions: ['proxy:read'],
        reaches: () => proxies.get,
      },
      {
        method: 'put',
        path: `/proxies/${ID}`,
        kind: 'management',
        permissions: ['proxy:update'],
        body: proxy,
        invalid: { body: { destination_url: 'https://example.com' }, field: 'name' },
        reaches: () => proxies.update,
      },
      {
        method: 'patch',
        path: `/proxies/${ID}`,
        kind: 'management',
        permissions: ['proxy:update'],
        body: { name: 'renamed' },
        invalid: { body: { require_auth: 'yes' }, field: 'require_auth' },
        reaches: () => proxies.update,
      },
      {
        method: 'delete',
        path: `/proxies/${ID}`,
        kind: 'management',
        permissions: ['proxy:delete'],
        reaches: () => proxies.delete,
      },
    ],
  );

  it('takes a merge-patch body', async () => {
    const res = await ctx.http
      .patch(`/proxies/${ID}`)
      .set('BT-API-KEY', ctx.key('management', ['proxy:update']))
      .set('Content-Type', 'application/merge-patch+json')
      .send(JSON.stringify({ name: 'renamed' }));
    expect(res.status).toBe(204);
    expect(proxies.update).toHaveBeenCalledTimes(1);
  });
});
