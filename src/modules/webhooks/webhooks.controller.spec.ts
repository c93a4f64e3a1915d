import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../test/support/controller-app';
import { PingController, WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

describe('WebhooksController and PingController', () => {
  const webhooks = fakeOf<WebhooksService>([
    'create',
    'list',
    'eventTypes',
    'get',
    'update',
    'delete',
    'deliveries',
    'retry',
  ]);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [WebhooksController, PingController],
      [{ provide: WebhooksService, useValue: webhooks }],
    );
  });
  afterAll(() => ctx.close());

  const hook = { name: 'orders', url: 'https://example.com/hook', events: ['token.created'] };
  const m = { kind: 'management' as const };
  describeRoutes(
    () => ctx,
    [
      {
        ...m,
        method: 'post',
        path: '/webhooks',
        permissions: ['webhook:create'],
        body: hook,
        invalid: { body: { ...hook, events: 'token.created' }, field: 'events' },
        reaches: () => webhooks.create,
      },
      {
        ...m,
        method: 'get',
        path: '/webhooks',
        permissions: ['webhook:read'],
        invalid: { query: { size: '0' }, field: 'size' },
        reaches: () => webhooks.list,
      },
      {
        ...m,
        method: 'get',
        path: '/webhooks/event-types',
        permissions: ['webhook:read'],
        answer: [],
        reaches: () => webhooks.eventTypes,
      },
      {
        ...m,
        method: 'get',
        path: `/webhooks/${ID}`,
        permissions: ['webhook:read'],
        reaches: () => webhooks.get,
      },
      {
        ...m,
        method: 'put',
        path: `/webhooks/${ID}`,
        permissions: ['webhook:update'],
        body: hook,
        invalid: { body: { ...hook, status: 'sleeping' }, field: 'status' },
        reaches: () => webhooks.update,
      },
      {
        ...m,
        method: 'delete',
        path: `/webhooks/${ID}`,
        permissions: ['webhook:delete'],
        reaches: () => webhooks.delete,
      },
      {
        ...m,
        method: 'get',
        path: `/webhooks/${ID}/deliveries`,
        permissions: ['webhook:read'],
        invalid: { query: { page: '0' }, field: 'page' },
        reaches: () => webhooks.deliveries,
      },
      {
        ...m,
        method: 'post',
        path: `/webhooks/${ID}/deliveries/${ID}/retry`,
        permissions: ['webhook:update'],
        reaches: () => webhooks.retry,
      },
    ],
  );

  it('GET /ping: 401 without a key, 200 with any valid key', async () => {
    expect((await ctx.http.get('/ping')).status).toBe(401);
    expect((await ctx.http.get('/ping').set('BT-API-KEY', ctx.key('public'))).status).toBe(200);
  });
});
