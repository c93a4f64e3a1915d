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
        answer: { id: 't' },
        reaches: () => tenants.getSelf,
      },
    ],
  );
});
