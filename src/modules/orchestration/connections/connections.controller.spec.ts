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
  const base = '/orchestration/connections';
  const answer = {
    id: ID,
    ...connection,
    fields: [{ key: 'api_key', value: '' }],
    active: true,
    environment: 'sandbox',
    status: 'available',
    three_d_secure_enabled: false,
  };
  const update = ['orchestration:connections:update'];
  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: base,
        permissions: ['orchestration:connections:create'],
        body: { ...connection, environment: 'live', active: false },
        invalid: bad,
        answer,
        reaches: () => connections.create,
        calledWith: ({ origin }) => [origin, { ...connection, environment: 'live', active: false }],
      },
      {
        method: 'get',
        path: base,
        permissions: update,
        answer: [answer],
        reaches: () => connections.list,
        calledWith: ({ who }) => [who],
      },
      {
        // The interface document's PUT on the collection lists, as GET does.
        method: 'put',
        path: base,
        permissions: update,
        answer: [answer],
        reaches: () => connections.list,
        calledWith: ({ who }) => [who],
      },
      {
        method: 'get',
        path: `${base}/${ID}`,
        permissions: update,
        answer,
        reaches: () => connections.get,
        calledWith: ({ who }) => [who, ID],
      },
      {
        method: 'put',
        path: `${base}/${ID}`,
        permissions: update,
        body: connection,
        invalid: { body: { ...connection, display_name: 5 }, field: 'display_name' },
        answer,
        reaches: () => connections.update,
        calledWith: ({ origin }) => [origin, ID, connection],
      },
      {
        // The interface document's POST on a connection updates it, as PUT does: 200, not 201.
        method: 'post',
        path: `${base}/${ID}`,
        permissions: update,
        body: connection,
        invalid: { body: { ...connection, environment: 'moon' }, field: 'environment' },
        status: 200,
        answer,
        reaches: () => connections.update,
        calledWith: ({ origin }) => [origin, ID, connection],
      },
      {
        method: 'delete',
        path: `${base}/${ID}`,
        permissions: ['orchestration:connections:delete'],
        reaches: () => connections.delete,
        calledWith: ({ origin }) => [origin, ID],
      },
    ],
  );

  it('answers 404 problem+json for a connection id that is not a uuid, before the service', async () => {
    const res = await ctx.http.get(`${base}/sandbox`).set('BT-API-KEY', ctx.key('private', update));
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(connections.get).not.toHaveBeenCalled();
  });

  it('is 400 naming each missing field', async () => {
    const res = await ctx.http
      .post(base)
      .set('BT-API-KEY', ctx.key('private', ['orchestration:connections:create']))
      .send({ display_name: 'Sandbox' });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.errors).sort()).toEqual([
      'accepted_countries',
      'accepted_currencies',
      'connection_formula_id',
      'fields',
      'method',
    ]);
    expect(connections.create).not.toHaveBeenCalled();
  });
});
