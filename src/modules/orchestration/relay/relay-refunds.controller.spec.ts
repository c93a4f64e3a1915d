import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../../test/support/controller-app';
import { RelayRefundsController } from './relay-refunds.controller';
import { RelayRefundsService } from './relay-refunds.service';

describe('RelayRefundsController', () => {
  const relay = fakeOf<RelayRefundsService>(['create', 'list', 'get']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([RelayRefundsController], [{ provide: RelayRefundsService, useValue: relay }]);
  });
  afterAll(() => ctx.close());

  const base = '/orchestration/relay/refunds';
  const request = {
    connection_id: ID,
    vendor_payment_id: 'pi_3OldPayment',
    amount: 700,
    currency: 'USD',
    reason: 'requested_by_customer',
  };
  const refund = {
    type: 'relay_refund',
    id: ID,
    ...request,
    status: 'succeeded',
    vendor_refund_id: 're_1',
    error_code: null,
    created_at: '2030-01-01T00:00:00.000Z',
    updated_at: '2030-01-01T00:00:00.000Z',
  };
  const create = {
    method: 'post' as const,
    path: base,
    permissions: ['orchestration:relay'],
    body: request,
    answer: refund,
    reaches: () => relay.create,
  };
  describeRoutes(
    () => ctx,
    [
      {
        ...create,
        invalid: { body: { ...request, amount: 0 }, field: 'amount' },
        calledWith: ({ origin }) => [origin, request],
      },
      // A management key may hold the permission too; the reason is optional.
      {
        ...create,
        kind: 'management',
        body: { ...request, reason: undefined },
        invalid: { body: { ...request, currency: 'usd' }, field: 'currency' },
        calledWith: ({ origin }) => [origin, { ...request, reason: undefined }],
      },
      {
        ...create,
        invalid: { body: { ...request, vendor_payment_id: 'pi 1' }, field: 'vendor_payment_id' },
        calledWith: ({ origin }) => [origin, request],
      },
      {
        ...create,
        invalid: { body: { ...request, connection_id: 'nope' }, field: 'connection_id' },
        calledWith: ({ origin }) => [origin, request],
      },
      {
        method: 'get',
        path: base,
        permissions: ['orchestration:relay'],
        query: { page: '2', size: '5' },
        invalid: { query: { size: '101' }, field: 'size' },
        answer: {
          data: [refund],
          pagination: { total_items: 6, page_number: 2, page_size: 5, total_pages: 2 },
        },
        reaches: () => relay.list,
        calledWith: ({ who }) => [who, { page: 2, size: 5 }],
      },
      {
        method: 'get',
        path: `${base}/${ID.toUpperCase()}`,
        permissions: ['orchestration:relay'],
        answer: refund,
        reaches: () => relay.get,
        calledWith: ({ who }) => [who, ID],
      },
    ],
  );

  it('a path id that is not a uuid is a 404, and the service is not asked', async () => {
    const res = await ctx.http
      .get(`${base}/nope`)
      .set('BT-API-KEY', ctx.key('private', ['orchestration:relay']));
    expect(res.status).toBe(404);
    expect(relay.get).not.toHaveBeenCalled();
  });
});
