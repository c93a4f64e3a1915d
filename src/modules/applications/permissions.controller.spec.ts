import { controllerApp, ControllerApp, describeRoutes, fakeOf } from '../../../test/support/controller-app';
import { ApplicationsService } from './applications.service';
import { PermissionsController } from './permissions.controller';

describe('PermissionsController', () => {
  const service = fakeOf<ApplicationsService>(['permissions']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([PermissionsController], [{ provide: ApplicationsService, useValue: service }]);
  });
  afterAll(() => ctx.close());

  // The catalog is not a promise: the service answers it at once.
  const catalog = [{ type: 'token:read', description: 'Read tokens', application_types: ['private'] }];
  describeRoutes(
    () => ctx,
    [
      {
        method: 'get',
        path: '/permissions',
        kind: 'public',
        query: { application_type: 'management' },
        invalid: { query: { application_type: 'robot' }, field: 'application_type' },
        answer: catalog,
        reaches: () => service.permissions,
        calledWith: () => ['management'],
      },
      {
        method: 'get',
        path: '/permissions',
        kind: 'session',
        answer: [],
        reaches: () => service.permissions,
        // Without a type: the whole catalog.
        calledWith: () => [undefined],
      },
    ],
  );

  it('answers any kind of key, holding no permission', async () => {
    service.permissions.mockReturnValue(catalog);
    for (const kind of ['public', 'private', 'management', 'session'] as const) {
      const res = await ctx.http.get('/permissions').set('BT-API-KEY', ctx.key(kind));
      expect(res.status).toBe(200);
      expect(res.body).toEqual(catalog);
    }
  });
});
