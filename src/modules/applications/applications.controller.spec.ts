import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../test/support/controller-app';
import { ApplicationsController } from './applications.controller';
import { ApplicationsService } from './applications.service';
import { PermissionsController } from './permissions.controller';

describe('ApplicationsController and PermissionsController', () => {
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
    'permissions',
  ]);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [ApplicationsController, PermissionsController],
      [{ provide: ApplicationsService, useValue: service }],
    );
  });
  afterAll(() => ctx.close());

  const app = () => ctx;
  const base = { kind: 'management' as const };

  describeRoutes(app, [
    {
      ...base,
      method: 'post',
      path: '/applications',
      permissions: ['application:create'],
      body: { name: 'shop', type: 'private' },
      invalid: { body: { name: 'shop', type: 'robot' }, field: 'type' },
      reaches: () => service.create,
    },
    {
      ...base,
      method: 'get',
      path: '/applications',
      permissions: ['application:read'],
      invalid: { query: { size: '0' }, field: 'size' },
      reaches: () => service.list,
    },
    { ...base, method: 'get', path: '/applications/key', reaches: () => service.get },
    {
      ...base,
      method: 'get',
      path: `/applications/${ID}`,
      permissions: ['application:read'],
      reaches: () => service.get,
    },
    {
      ...base,
      method: 'put',
      path: `/applications/${ID}`,
      permissions: ['application:update'],
      body: { name: 'renamed' },
      invalid: { body: { name: 7 }, field: 'name' },
      reaches: () => service.update,
    },
    {
      ...base,
      method: 'delete',
      path: `/applications/${ID}`,
      permissions: ['application:delete'],
      reaches: () => service.delete,
    },
    {
      ...base,
      method: 'get',
      path: `/applications/${ID}/keys`,
      permissions: ['application:read'],
      reaches: () => service.listKeys,
    },
    {
      ...base,
      method: 'get',
      path: `/applications/${ID}/keys/${ID}`,
      permissions: ['application:read'],
      reaches: () => service.getKey,
    },
    {
      ...base,
      method: 'post',
      path: `/applications/${ID}/keys`,
      permissions: ['application:update'],
      answer: { id: ID },
      reaches: () => service.createKey,
    },
    {
      ...base,
      method: 'delete',
      path: `/applications/${ID}/keys/${ID}`,
      permissions: ['application:update'],
      reaches: () => service.deleteKey,
    },
    {
      method: 'get',
      path: '/permissions',
      kind: 'public',
      invalid: { query: { application_type: 'robot' }, field: 'application_type' },
      answer: [],
      reaches: () => service.permissions,
    },
  ]);

  it('answers 404 problem+json for a path id that is not a uuid, before the service', async () => {
    const res = await ctx.http
      .get('/applications/not-a-uuid')
      .set('BT-API-KEY', ctx.key('management', ['application:read']));
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(service.get).not.toHaveBeenCalled();
  });
});
