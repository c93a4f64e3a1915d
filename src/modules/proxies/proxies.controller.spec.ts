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
  const answer = { id: ID, key: 'proxy-key', ...proxy, require_auth: true };
  const m = { kind: 'management' as const };
  describeRoutes(
    () => ctx,
    [
      {
        ...m,
        method: 'post',
        path: '/proxies',
        permissions: ['proxy:create'],
        body: { ...proxy, require_auth: false },
        invalid: { body: { ...proxy, destination_url: 5 }, field: 'destination_url' },
        answer: { ...answer, require_auth: false },
        reaches: () => proxies.create,
        calledWith: ({ origin }) => [origin, { ...proxy, require_auth: false }],
      },
      {
        ...m,
        method: 'get',
        path: `/proxies?id=${ID}&name=shop&page=2`,
        permissions: ['proxy:read'],
        invalid: { query: { id: 'not-a-uuid' }, field: 'id' },
        answer: {
          data: [answer],
          pagination: { total_items: 21, page_number: 2, page_size: 20, total_pages: 2 },
        },
        reaches: () => proxies.list,
        calledWith: ({ who }) => [who, { id: [ID], name: 'shop', page: 2, size: 20 }],
      },
      {
        ...m,
        method: 'get',
        path: `/proxies/${ID}`,
        permissions: ['proxy:read'],
        answer,
        reaches: () => proxies.get,
        calledWith: ({ who }) => [who, ID],
      },
      {
        ...m,
        method: 'put',
        path: `/proxies/${ID}`,
        permissions: ['proxy:update'],
        body: proxy,
        invalid: { body: { destination_url: 'https://example.com' }, field: 'name' },
        answer,
        reaches: () => proxies.update,
        // A replacement: the last argument says so (require_auth left out is true again).
        calledWith: ({ origin }) => [origin, ID, proxy, true],
      },
      {
        ...m,
        method: 'patch',
        path: `/proxies/${ID}`,
        permissions: ['proxy:update'],
        body: { name: 'renamed' },
        invalid: { body: { require_auth: 'yes' }, field: 'require_auth' },
        // 204 without a body, whatever the service answers.
        answer,
        status: 204,
        responds: {},
        reaches: () => proxies.update,
        // A patch: only the fields given, and not a replacement.
        calledWith: ({ origin }) => [origin, ID, { name: 'renamed' }, false],
      },
      {
        ...m,
        method: 'delete',
        path: `/proxies/${ID}`,
        permissions: ['proxy:delete'],
        reaches: () => proxies.delete,
        calledWith: ({ origin }) => [origin, ID],
      },
    ],
  );

  it('takes a merge-patch body', async () => {
    const key = ctx.key('management', ['proxy:update']);
    const res = await ctx.http
      .patch(`/proxies/${ID}`)
      .set('BT-API-KEY', key)
      .set('Content-Type', 'application/merge-patch+json')
      .send(JSON.stringify({ require_auth: false }));
    expect(res.status).toBe(204);
    expect(proxies.update).toHaveBeenCalledWith(ctx.caller(key).origin, ID, { require_auth: false }, false);
  });

  it('answers 404 problem+json for a proxy id that is not a uuid, before the service', async () => {
    const res = await ctx.http.get('/proxies/shop').set('BT-API-KEY', ctx.key('management', ['proxy:read']));
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(proxies.get).not.toHaveBeenCalled();
  });
});
