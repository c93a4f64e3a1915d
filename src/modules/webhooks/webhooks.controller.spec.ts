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

  const hook = { name: 'orders', url: 'https://example.com/hook', events: ['token:created'] };
  const DELIVERY = '22222222-2222-4222-8222-222222222222';
  const webhook = { id: ID, status: 'enabled', ...hook, notify_email: null };
  const delivery = { id: DELIVERY, event_type: 'token:created', status: 'pending', attempts: 1 };
  const m = { kind: 'management' as const };
  describeRoutes(
    () => ctx,
    [
      {
        ...m,
        method: 'post',
        path: '/webhooks',
        permissions: ['webhook:create'],
        body: { ...hook, notify_email: 'ops@merchant.example' },
        invalid: { body: { ...hook, events: 'token:created' }, field: 'events' },
        answer: { ...webhook, notify_email: 'ops@merchant.example', secret: 'whsec_x' },
        reaches: () => webhooks.create,
        calledWith: ({ origin }) => [origin, { ...hook, notify_email: 'ops@merchant.example' }],
      },
      {
        ...m,
        method: 'get',
        path: '/webhooks',
        permissions: ['webhook:read'],
        query: { start: 'cursor', size: '3' },
        invalid: { query: { size: '0' }, field: 'size' },
        answer: { data: [webhook], pagination: { page_size: 3, next: 'next' } },
        reaches: () => webhooks.list,
        calledWith: ({ who }) => [who, { start: 'cursor', size: 3 }],
      },
      {
        ...m,
        method: 'get',
        path: '/webhooks/event-types',
        permissions: ['webhook:read'],
        answer: ['token:created'],
        reaches: () => webhooks.eventTypes,
        calledWith: () => [],
      },
      {
        ...m,
        method: 'get',
        path: `/webhooks/${ID}`,
        permissions: ['webhook:read'],
        answer: webhook,
        reaches: () => webhooks.get,
        calledWith: ({ who }) => [who, ID],
      },
      {
        ...m,
        method: 'put',
        path: `/webhooks/${ID}`,
        permissions: ['webhook:update'],
        body: { ...hook, status: 'disabled' },
        invalid: { body: { ...hook, status: 'sleeping' }, field: 'status' },
        answer: { ...webhook, status: 'disabled' },
        reaches: () => webhooks.update,
        calledWith: ({ origin }) => [origin, ID, { ...hook, status: 'disabled' }],
      },
      {
        ...m,
        method: 'delete',
        path: `/webhooks/${ID}`,
        permissions: ['webhook:delete'],
        reaches: () => webhooks.delete,
        calledWith: ({ origin }) => [origin, ID],
      },
      {
        ...m,
        method: 'get',
        path: `/webhooks/${ID}/deliveries`,
        permissions: ['webhook:read'],
        query: { page: '2' },
        invalid: { query: { page: '0' }, field: 'page' },
        answer: {
          data: [delivery],
          pagination: { total_items: 21, page_number: 2, page_size: 20, total_pages: 2 },
        },
        reaches: () => webhooks.deliveries,
        calledWith: ({ who }) => [who, ID, { page: 2, size: 20 }],
      },
      {
        ...m,
        method: 'post',
        path: `/webhooks/${ID}/deliveries/${DELIVERY}/retry`,
        permissions: ['webhook:update'],
        status: 200,
        answer: delivery,
        reaches: () => webhooks.retry,
        calledWith: ({ origin }) => [origin, ID, DELIVERY],
      },
    ],
  );

  it('answers 404 problem+json for a webhook or delivery id that is not a uuid, before the service', async () => {
    const key = ctx.key('management', ['webhook:read', 'webhook:update']);
    for (const req of [
      ctx.http.get('/webhooks/hook-1'),
      ctx.http.post(`/webhooks/${ID}/deliveries/delivery-1/retry`),
    ]) {
      const res = await req.set('BT-API-KEY', key);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect(webhooks.get).not.toHaveBeenCalled();
    expect(webhooks.retry).not.toHaveBeenCalled();
  });

  it('GET /ping: 401 without a key, 200 with any valid key', async () => {
    expect((await ctx.http.get('/ping')).status).toBe(401);
    expect((await ctx.http.get('/ping').set('BT-API-KEY', ctx.key('public'))).status).toBe(200);
  });
});
