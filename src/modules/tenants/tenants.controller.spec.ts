import { controllerApp, ControllerApp, describeRoutes, fakeOf } from '../../../test/support/controller-app';
import { TenantsController } from './tenants.controller';
import { TenantsService } from './tenants.service';

describe('TenantsController', () => {
  const tenants = fakeOf<TenantsService>(['getSelf']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([TenantsController], [{ provide: TenantsService, useValue: tenants }]);
  });
  afterAll(() => ctx.close());

  describeRoutes(
    () => ctx,
    [
      {
        method: 'get',
        path: '/tenants/self',
        kind: 'management',
        permissions: ['tenant:read'],
        answer: {
          id: '00000000-0000-4000-8000-000000000001',
          name: 'Shop',
          created_at: '2030-01-01T00:00:00.000Z',
        },
        reaches: () => tenants.getSelf,
        // The tenant is the caller's: nothing in the request names another.
        calledWith: ({ who }) => [who],
      },
    ],
  );
});
