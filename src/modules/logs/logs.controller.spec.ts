import { controllerApp, ControllerApp, describeRoutes, fakeOf } from '../../../test/support/controller-app';
import { LogsController } from './logs.controller';
import { LogsService } from './logs.service';

describe('LogsController', () => {
  const logs = fakeOf<LogsService>(['list', 'entityTypes']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([LogsController], [{ provide: LogsService, useValue: logs }]);
  });
  afterAll(() => ctx.close());

  describeRoutes(
    () => ctx,
    [
      {
        method: 'get',
        path: '/logs',
        kind: 'management',
        permissions: ['log:read'],
        query: { entity_type: 'token' },
        invalid: { query: { entity_type: 'nothing' }, field: 'entity_type' },
        reaches: () => logs.list,
      },
      {
        method: 'get',
        path: '/logs/entity-types',
        kind: 'management',
        permissions: ['log:read'],
        answer: [],
        reaches: () => logs.entityTypes,
      },
    ],
  );
});
