import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../test/support/controller-app';
import { ApplicationsController } from './applications.controller';
import { ApplicationsService } from './applications.service';

describe('ApplicationsController', () => {
  const service = fakeOf<ApplicationsService>([
    'create',
    'list',
    'get',
    'update',
    'delete',
    'listKeys',
    'getKey',
    'createKey',
    'deleteKey',
  ]);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [ApplicationsController],
      [{ provide: ApplicationsService, useValue: service }],
    );
  });
  afterAll(() => ctx.close());

  const app = () => ctx;
  const base = { kind: 'management' as const };
  const KEY_ID = '22222222-2222-4222-8222-222222222222';
  const application = { id: ID, name: 'shop', type: 'private', permissions: ['token:read'] };
  const rule = { priority: 1, container: '/pci/', transform: 'mask', permissions: ['token:read'] };

  describeRoutes(app, [
    {
      ...base,
      method: 'post',
      path: '/applications',
      permissions: ['application:create'],
      body: { name: 'shop', type: 'private', permissions: ['token:read'], rules: [rule], create_key: true },
      invalid: { body: { name: 'shop', type: 'robot' }, field: 'type' },
      answer: { ...application, keys: [{ id: KEY_ID, key: 'key_pvt_x' }] },
      reaches: () => service.create,
      calledWith: ({ origin }) => [
        origin,
        { name: 'shop', type: 'private', permissions: ['token:read'], rules: [rule], create_key: true },
      ],
    },
    {
      ...base,
      method: 'get',
      path: '/applications',
      permissions: ['application:read'],
      query: { type: 'public', size: '5' },
      invalid: { query: { size: '0' }, field: 'size' },
      answer: { data: [application], pagination: { page_size: 5 } },
      reaches: () => service.list,
      // A single `type` or `id` is taken as a list of one.
      calledWith: ({ who }) => [who, { type: ['public'], page: 1, size: 5 }],
    },
    {
      ...base,
      method: 'get',
      path: `/applications?id=${ID}&id=${KEY_ID}&start=cursor`,
      permissions: ['application:read'],
      invalid: { query: { id: 'app-1' }, field: 'id' },
      reaches: () => service.list,
      calledWith: ({ who }) => [who, { id: [ID, KEY_ID], start: 'cursor', page: 1, size: 20 }],
    },
    {
      ...base,
      method: 'get',
      path: '/applications/key',
      answer: application,
      reaches: () => service.get,
      // The application of the calling key, whichever it is.
      calledWith: ({ who }) => [who, who.applicationId],
    },
    {
      ...base,
      method: 'get',
      path: `/applications/${ID}`,
      permissions: ['application:read'],
      answer: application,
      reaches: () => service.get,
      calledWith: ({ who }) => [who, ID],
    },
    {
      ...base,
      method: 'put',
      path: `/applications/${ID}`,
      permissions: ['application:update'],
      body: { name: 'renamed', allowed_origins: ['https://shop.example'] },
      invalid: { body: { name: 7 }, field: 'name' },
      answer: { ...application, name: 'renamed' },
      reaches: () => service.update,
      calledWith: ({ origin }) => [
        origin,
        ID,
        { name: 'renamed', allowed_origins: ['https://shop.example'] },
      ],
    },
    {
      ...base,
      method: 'delete',
      path: `/applications/${ID}`,
      permissions: ['application:delete'],
      reaches: () => service.delete,
      calledWith: ({ origin }) => [origin, ID],
    },
    {
      ...base,
      method: 'get',
      path: `/applications/${ID}/keys`,
      permissions: ['application:read'],
      answer: [{ id: KEY_ID }],
      reaches: () => service.listKeys,
      calledWith: ({ who }) => [who, ID],
    },
    {
      ...base,
      method: 'get',
      path: `/applications/${ID}/keys/${KEY_ID}`,
      permissions: ['application:read'],
      answer: { id: KEY_ID },
      reaches: () => service.getKey,
      calledWith: ({ who }) => [who, ID, KEY_ID],
    },
    {
      ...base,
      method: 'post',
      path: `/applications/${ID}/keys`,
      permissions: ['application:update'],
      answer: { id: KEY_ID, key: 'key_pvt_x' },
      reaches: () => service.createKey,
      calledWith: ({ origin }) => [origin, ID],
    },
    {
      ...base,
      method: 'delete',
      path: `/applications/${ID}/keys/${KEY_ID}`,
      permissions: ['application:update'],
      reaches: () => service.deleteKey,
      calledWith: ({ origin }) => [origin, ID, KEY_ID],
    },
  ]);

  it('answers 404 problem+json for a path id that is not a uuid, before the service', async () => {
    const key = ctx.key('management', ['application:read', 'application:update']);
    for (const req of [
      ctx.http.get('/applications/not-a-uuid'),
      ctx.http.get(`/applications/${ID}/keys/not-a-uuid`),
      ctx.http.delete(`/applications/${ID}/keys/not-a-uuid`),
    ]) {
      const res = await req.set('BT-API-KEY', key);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect(service.get).not.toHaveBeenCalled();
    expect(service.getKey).not.toHaveBeenCalled();
    expect(service.deleteKey).not.toHaveBeenCalled();
  });

  it('is 400 naming the field of a bad access rule, inside the list', async () => {
    const res = await ctx.http
      .post('/applications')
      .set('BT-API-KEY', ctx.key('management', ['application:create']))
      .send({ name: 'shop', type: 'private', rules: [{ ...rule, priority: -1 }] });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.errors)).toEqual(['rules[0].priority']);
    expect(service.create).not.toHaveBeenCalled();
  });
});
