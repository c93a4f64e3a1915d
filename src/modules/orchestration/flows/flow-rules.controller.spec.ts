import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../../test/support/controller-app';
import { FlowRulesController } from './flow-rules.controller';
import { FlowRulesService } from './flow-rules.service';

describe('FlowRulesController', () => {
  const rules = fakeOf<FlowRulesService>(['list', 'create', 'get', 'update', 'delete']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([FlowRulesController], [{ provide: FlowRulesService, useValue: rules }]);
  });
  afterAll(() => ctx.close());

  const route = '/orchestration/flows/card-transaction/actions/route-transaction/rules';
  const decline = '/orchestration/flows/card-transaction/actions/decline-early/rules';
  const body = {
    description: 'USD to Stripe',
    conditions: [{ name: 'currency', operator: 'is_one_of', value: ['USD'] }],
    outcome: { type: 'list', result: [ID] },
  };
  const rule = {
    type: 'rule',
    id: ID,
    flow: 'card-transaction',
    action: 'route-transaction',
    position: 1,
    ...body,
    created_at: '2030-01-01T00:00:00.000Z',
    updated_at: '2030-01-01T00:00:00.000Z',
  };
  describeRoutes(
    () => ctx,
    [
      {
        method: 'get',
        path: route,
        permissions: ['orchestration:flows:read'],
        answer: [rule],
        reaches: () => rules.list,
        calledWith: ({ who }) => [who, 'route-transaction'],
      },
      {
        method: 'post',
        path: route,
        permissions: ['orchestration:flows:update'],
        body,
        invalid: { body: { ...body, description: '' }, field: 'description' },
        answer: rule,
        reaches: () => rules.create,
        // The conditions and outcome reach the service as given: it checks them (docs/routing.md).
        calledWith: ({ origin }) => [origin, 'route-transaction', body],
      },
      {
        method: 'post',
        path: decline,
        permissions: ['orchestration:flows:update'],
        body: {
          description: 'No JPY',
          conditions: [],
          outcome: { type: 'boolean', result: true },
          position: 1,
        },
        invalid: { body: { ...body, position: 'first' }, field: 'position' },
        reaches: () => rules.create,
        calledWith: ({ origin }) => [
          origin,
          'decline-early',
          { description: 'No JPY', conditions: [], outcome: { type: 'boolean', result: true }, position: 1 },
        ],
      },
      {
        method: 'get',
        path: `${route}/${ID}`,
        permissions: ['orchestration:flows:read'],
        answer: rule,
        reaches: () => rules.get,
        calledWith: ({ who }) => [who, 'route-transaction', ID],
      },
      {
        method: 'put',
        path: `${decline}/${ID}`,
        permissions: ['orchestration:flows:update'],
        body: { ...body, position: 2 },
        invalid: { body: { ...body, conditions: 'all' }, field: 'conditions' },
        answer: { ...rule, position: 2 },
        reaches: () => rules.update,
        calledWith: ({ origin }) => [origin, 'decline-early', ID, { ...body, position: 2 }],
      },
      {
        method: 'delete',
        path: `${route}/${ID}`,
        permissions: ['orchestration:flows:update'],
        reaches: () => rules.delete,
        calledWith: ({ origin }) => [origin, 'route-transaction', ID],
      },
    ],
  );

  it('is 404 problem+json for an action that does not exist, before the service', async () => {
    const key = ctx.key('private', ['orchestration:flows:read', 'orchestration:flows:update']);
    const other = '/orchestration/flows/card-transaction/actions/refund-later/rules';
    for (const req of [
      ctx.http.get(other),
      ctx.http.get(`${other}/${ID}`),
      ctx.http.delete(`${other}/${ID}`),
    ]) {
      const res = await req.set('BT-API-KEY', key);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    const created = await ctx.http.post(other).set('BT-API-KEY', key).send(body);
    expect(created.status).toBe(404);
    expect(rules.list).not.toHaveBeenCalled();
    expect(rules.get).not.toHaveBeenCalled();
    expect(rules.delete).not.toHaveBeenCalled();
    expect(rules.create).not.toHaveBeenCalled();
  });

  it('is 404 problem+json for a rule id that is not a uuid, before the service', async () => {
    const res = await ctx.http
      .get(`${route}/rule-1`)
      .set('BT-API-KEY', ctx.key('private', ['orchestration:flows:read']));
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(rules.get).not.toHaveBeenCalled();
  });

  it('is 400 naming each missing field of a rule', async () => {
    const res = await ctx.http
      .post(route)
      .set('BT-API-KEY', ctx.key('private', ['orchestration:flows:update']))
      .send({});
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.errors).sort()).toEqual(['conditions', 'description', 'outcome']);
    expect(rules.create).not.toHaveBeenCalled();
  });
});
