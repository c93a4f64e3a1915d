import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../../test/support/controller-app';
import { ConnectionsController } from './connections.controller';
import { ConnectionsService } from './connections.service';

describe('ConnectionsController', () => {
  const connections = fakeOf<ConnectionsService>(['create', 'list', 'get', 'update', 'delete']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [ConnectionsController],
      [{ provide: ConnectionsService, useValue: connections }],
    );
  });
  afterAll(() => ctx.close());

  const connection = {
    connection_formula_id: 'sandbox-card',
    method: 'card',
    display_name: 'Sandbox',
    fields: [{ key: 'api_key', value: 'secret' }],
    accepted_countries: ['US'],
    accepted_currencies: ['USD'],
  };
  const bad = { body: { ...connection, fields: [{ key: '', value: 'secret' }] }, field: 'fields[0].key' };
  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: '/orchestration/connections',
        permissions: ['orchestration:connections:create'],
        body: connection,
        invalid: bad,
        reaches: () => connections.create,
      },
      {
        method: 'get',
        path: '/orchestration/connections',
        permissions: ['orchestration:connections:update'],
        answer: [],
        reaches: () => connections.list,
      },
      {
        method: 'get',
        path: `/orchestration/connections/${ID}`,
        permissions: ['orchestration:connections:update'],
        reaches: () => connections.get,
      },
      {
        method: 'put',
        path: `/orchestration/connections/${ID}`,
        permissions: ['orchestration:connections:update'],
        body: connection,
        invalid: { body: { ...connection, display_name: 5 }, field: 'display_name' },
        reaches: () => connections.update,
      },
      {
        method: 'post',
        path: `/orchestration/connections/${ID}`,
        permissions: ['orchestration:connections:update'],
        body: connection,
        invalid: { body: { ...connection, environment: 'moon' }, field: 'environment' },
        reaches: () => connections.update,
      },
      {
        method: 'delete',
        path: `/orchestration/connections/${ID}`,
        permissions: ['orchestration:connections:delete'],
        reaches: () => connections.delete,
      },
    ],
  );
});
