import { controllerApp, ControllerApp, describeRoutes, fakeOf } from '../../../test/support/controller-app';
import { LogsController } from './logs.controller';
import { LogsService } from './logs.service';

describe('LogsController', () => {
  const logs = fakeOf<LogsService>([
    'list',
    'entityTypes',
    'checkpoint',
    'signingKeys',
    'consistency',
    'proof',
  ]);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([LogsController], [{ provide: LogsService, useValue: logs }]);
  });
  afterAll(() => ctx.close());

  const read = { kind: 'management' as const, permissions: ['log:read'] };
  const page = { data: [], pagination: { page_size: 5, after: null } };
  describeRoutes(
    () => ctx,
    [
      {
        ...read,
        method: 'get',
        path: '/logs',
        query: { entity_type: 'token', entity_id: 'tok_1', start: 'cursor', size: '5' },
        invalid: { query: { entity_type: 'nothing' }, field: 'entity_type' },
        reaches: () => logs.list,
        calledWith: ({ who }) => [
          who,
          { entity_type: 'token', entity_id: 'tok_1', start: 'cursor', size: 5 },
        ],
        answer: page,
      },
      {
        ...read,
        method: 'get',
        path: '/logs',
        query: { start_date: '2030-01-01T00:00:00Z', page: '2' },
        invalid: { query: { start_date: 'yesterday' }, field: 'start_date' },
        reaches: () => logs.list,
        // The page size not given is the default.
        calledWith: ({ who }) => [who, { start_date: '2030-01-01T00:00:00Z', page: 2, size: 20 }],
      },
      {
        ...read,
        method: 'get',
        path: '/logs/entity-types',
        answer: [{ entity_type: 'token' }],
        reaches: () => logs.entityTypes,
        calledWith: () => [],
      },
      {
        ...read,
        method: 'get',
        path: '/logs/checkpoint',
        answer: { tree_size: 3, root_hash: 'aGFzaA==', note: 'note' },
        reaches: () => logs.checkpoint,
        calledWith: ({ who }) => [who],
      },
      {
        ...read,
        method: 'get',
        path: '/logs/checkpoint/keys',
        answer: [{ name: 'host/audit', key_id: '0a0b0c0d', public_key: 'cHVi' }],
        reaches: () => logs.signingKeys,
        calledWith: () => [],
      },
      {
        ...read,
        method: 'get',
        path: '/logs/consistency',
        query: { first: '2', second: '7' },
        invalid: { query: { first: '0', second: '7' }, field: 'first' },
        answer: { first: 2, second: 7, proof: [] },
        reaches: () => logs.consistency,
        calledWith: ({ who }) => [who, { first: 2, second: 7 }],
      },
      {
        ...read,
        method: 'get',
        path: '/logs/log_1/proof',
        query: { tree_size: '9' },
        invalid: { query: { tree_size: 'all' }, field: 'tree_size' },
        reaches: () => logs.proof,
        calledWith: ({ who }) => [who, 'log_1', { tree_size: 9 }],
      },
    ],
  );

  it('is 400 naming second when the consistency query lacks it', async () => {
    const res = await ctx.http
      .get('/logs/consistency')
      .query({ first: '1' })
      .set('BT-API-KEY', ctx.key('management', ['log:read']));
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.errors)).toEqual(['second']);
    expect(logs.consistency).not.toHaveBeenCalled();
  });
});
