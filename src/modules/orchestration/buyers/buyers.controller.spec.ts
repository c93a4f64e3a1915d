import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../../test/support/controller-app';
import { BuyersController } from './buyers.controller';
import { BuyersService } from './buyers.service';
import { ConnectionTokensService } from './connection-tokens.service';

describe('BuyersController', () => {
  const buyers = fakeOf<BuyersService>([
    'create',
    'list',
    'get',
    'update',
    'delete',
    'attach',
    'listMethods',
    'detach',
  ]);
  const connectionTokens = fakeOf<ConnectionTokensService>(['set']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [BuyersController],
      [
        { provide: BuyersService, useValue: buyers },
        { provide: ConnectionTokensService, useValue: connectionTokens },
      ],
    );
  });
  afterAll(() => ctx.close());

  const base = '/orchestration/buyers';
  const UPPER_ID = 'ABCDEF01-2345-4678-89AB-CDEF01234567';
  const buyer = {
    type: 'buyer',
    id: ID,
    external_identifier: 'customer-1',
    display_name: 'Ada',
    created_at: '2030-01-01T00:00:00.000Z',
    updated_at: '2030-01-01T00:00:00.000Z',
  };
  const stored = {
    type: 'payment-method',
    id: 'tok_1',
    method: 'card',
    buyer_id: ID,
    scheme: 'visa',
    label: '4242',
    expiration_date: '12/30',
    status: 'active',
    created_at: '2030-01-01T00:00:00.000Z',
    last_used_at: null,
    connection_tokens: [],
  };
  const entry = {
    connection_id: ID,
    token: 'pm_1SecretToken',
    connection_customer: 'cus_1',
    network_transaction_id: '585011223344556',
  };
  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: base,
        permissions: ['orchestration:buyers:create'],
        body: { external_identifier: 'customer-1', display_name: 'Ada' },
        invalid: { body: { display_name: '' }, field: 'display_name' },
        answer: buyer,
        reaches: () => buyers.create,
        calledWith: ({ origin }) => [origin, { external_identifier: 'customer-1', display_name: 'Ada' }],
      },
      {
        method: 'get',
        path: base,
        permissions: ['orchestration:buyers:read'],
        query: { search: 'ad', page: '3', size: '10' },
        invalid: { query: { search: '' }, field: 'search' },
        answer: {
          data: [buyer],
          pagination: { total_items: 21, page_number: 3, page_size: 10, total_pages: 3 },
        },
        reaches: () => buyers.list,
        calledWith: ({ who }) => [who, { search: 'ad', page: 3, size: 10 }],
      },
      {
        method: 'get',
        path: base,
        permissions: ['orchestration:buyers:read'],
        query: { external_identifier: 'customer-1' },
        invalid: { query: { size: '101' }, field: 'size' },
        reaches: () => buyers.list,
        // Pagination not given is the first page of 20.
        calledWith: ({ who }) => [who, { external_identifier: 'customer-1', page: 1, size: 20 }],
      },
      {
        method: 'get',
        path: `${base}/${UPPER_ID}`,
        permissions: ['orchestration:buyers:read'],
        answer: buyer,
        reaches: () => buyers.get,
        // The path id is taken in lower case.
        calledWith: ({ who }) => [who, UPPER_ID.toLowerCase()],
      },
      {
        method: 'put',
        path: `${base}/${ID}`,
        permissions: ['orchestration:buyers:update'],
        body: { display_name: null },
        invalid: { body: { external_identifier: 7 }, field: 'external_identifier' },
        answer: { ...buyer, display_name: null },
        reaches: () => buyers.update,
        // null clears the field: it reaches the service as null, the field left out stays out.
        calledWith: ({ origin }) => [origin, ID, { display_name: null }],
      },
      {
        method: 'delete',
        path: `${base}/${ID}`,
        permissions: ['orchestration:buyers:delete'],
        reaches: () => buyers.delete,
        calledWith: ({ origin }) => [origin, ID],
      },
      {
        method: 'post',
        path: `${base}/${ID}/payment-methods`,
        permissions: ['orchestration:buyers:update'],
        body: { token: 'tok_1' },
        invalid: { body: { token: '' }, field: 'token' },
        answer: stored,
        reaches: () => buyers.attach,
        calledWith: ({ origin }) => [origin, ID, { token: 'tok_1' }, expect.any(Function)],
      },
      {
        method: 'get',
        path: `${base}/${ID}/payment-methods`,
        permissions: ['orchestration:buyers:read'],
        answer: [stored],
        reaches: () => buyers.listMethods,
        calledWith: ({ who }) => [who, ID],
      },
      {
        method: 'delete',
        path: `${base}/${ID}/payment-methods/tok_1`,
        permissions: ['orchestration:buyers:update'],
        reaches: () => buyers.detach,
        calledWith: ({ origin }) => [origin, ID, 'tok_1'],
      },
      {
        method: 'put',
        path: `${base}/${ID}/payment-methods/tok_1/connection-tokens`,
        permissions: ['orchestration:buyers:update'],
        body: { connection_tokens: [entry] },
        invalid: {
          body: { connection_tokens: [{ ...entry, connection_id: 'stripe' }] },
          field: 'connection_tokens[0].connection_id',
        },
        answer: {
          ...stored,
          connection_tokens: [{ ...entry, token: '****oken' }],
        },
        reaches: () => connectionTokens.set,
        calledWith: ({ origin }) => [origin, ID, 'tok_1', { connection_tokens: [entry] }],
      },
      {
        method: 'put',
        path: `${base}/${ID}/payment-methods/tok_1/connection-tokens`,
        permissions: ['orchestration:buyers:update'],
        // The customer and the network transaction id are optional; an empty list clears the card's.
        body: { connection_tokens: [] },
        invalid: {
          body: { connection_tokens: [{ connection_id: ID, token: '' }] },
          field: 'connection_tokens[0].token',
        },
        reaches: () => connectionTokens.set,
        calledWith: ({ origin }) => [origin, ID, 'tok_1', { connection_tokens: [] }],
      },
    ],
  );

  it('refuses a body without the list, or a list entry with a field it does not know, naming it', async () => {
    const key = ctx.key('private', ['orchestration:buyers:update']);
    const path = `${base}/${ID}/payment-methods/tok_1/connection-tokens`;
    const missing = await ctx.http.put(path).set('BT-API-KEY', key).send({});
    expect(missing.status).toBe(400);
    expect(Object.keys(missing.body.errors)).toEqual(['connection_tokens']);
    const unknown = await ctx.http
      .put(path)
      .set('BT-API-KEY', key)
      .send({ connection_tokens: [{ ...entry, cvc: '123' }] });
    expect(unknown.status).toBe(400);
    expect(Object.keys(unknown.body.errors)).toEqual(['connection_tokens[0].cvc']);
    // A value is never echoed.
    expect(JSON.stringify(unknown.body)).not.toContain('pm_1SecretToken');
    expect(connectionTokens.set).not.toHaveBeenCalled();
  });

  it('answers 200 with the card the buyer already had (the service says it was not stored anew)', async () => {
    buyers.attach.mockImplementationOnce(
      (_origin: unknown, _id: string, _body: unknown, stored: (created: boolean) => void) => {
        stored(false);
        return Promise.resolve({ id: 'tok_1' });
      },
    );
    const res = await ctx.http
      .post(`${base}/${ID}/payment-methods`)
      .set('BT-API-KEY', ctx.key('private', ['orchestration:buyers:update']))
      .send({ token: 'tok_1' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 'tok_1' });
  });

  it('answers 404 problem+json for a buyer id that is not a uuid, before the service', async () => {
    const key = ctx.key('private', ['orchestration:buyers:read', 'orchestration:buyers:update']);
    for (const req of [
      ctx.http.get(`${base}/customer-1`),
      ctx.http.get(`${base}/customer-1/payment-methods`),
      ctx.http.delete(`${base}/customer-1/payment-methods/tok_1`),
    ]) {
      const res = await req.set('BT-API-KEY', key);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect(buyers.get).not.toHaveBeenCalled();
    expect(buyers.listMethods).not.toHaveBeenCalled();
    expect(buyers.detach).not.toHaveBeenCalled();
  });

  it('refuses a field it does not know, naming it', async () => {
    const res = await ctx.http
      .post(base)
      .set('BT-API-KEY', ctx.key('private', ['orchestration:buyers:create']))
      .send({ display_name: 'Ada', email: 'ada@example.com' });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.errors)).toContain('email');
    expect(buyers.create).not.toHaveBeenCalled();
  });
});
