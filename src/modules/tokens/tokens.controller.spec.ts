import { controllerApp, ControllerApp, describeRoutes, fakeOf } from '../../../test/support/controller-app';
import { TokenizeService } from './tokenize/tokenize.service';
import { TokensController } from './tokens.controller';
import { TokenSearchService } from './search/token-search.service';
import { TokensService } from './tokens.service';

describe('TokensController', () => {
  const tokenizer = fakeOf<TokenizeService>(['tokenize', 'createOne']);
  const searches = fakeOf<TokenSearchService>(['list', 'search', 'listV2', 'searchV2']);
  const tokens = fakeOf<TokensService>(['get', 'update', 'delete']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [TokensController],
      [
        { provide: TokenizeService, useValue: tokenizer },
        { provide: TokensService, useValue: tokens },
        { provide: TokenSearchService, useValue: searches },
      ],
    );
  });
  afterAll(() => ctx.close());

  const UPPER_UUID = 'ABCDEF01-2345-4678-89AB-CDEF01234567';
  const token = { id: 'tok_1', type: 'card', mask: { number: '424242XXXXXX4242' } };
  const filters = { ids: [], types: [], fingerprints: [], containers: [], metadata: [], dataValues: [] };
  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: '/tokenize',
        permissions: ['token:create'],
        body: { email: 'jane@example.com', card: { type: 'card', data: { number: '4242424242424242' } } },
        answer: { email: 'tok_1', card: token },
        // The free-form body reaches the service as sent: it parses it (tokenize-request.ts).
        calledWith: ({ origin }) => [
          origin,
          { email: 'jane@example.com', card: { type: 'card', data: { number: '4242424242424242' } } },
        ],
        reaches: () => tokenizer.tokenize,
      },
      {
        method: 'post',
        path: '/tokens',
        permissions: ['token:create'],
        body: { type: 'token', data: 'x', id: 'my-id' },
        answer: { id: 'my-id', type: 'token' },
        calledWith: ({ origin }) => [origin, { type: 'token', data: 'x', id: 'my-id' }],
        reaches: () => tokenizer.createOne,
      },
      {
        method: 'get',
        path: `/tokens?type=card&type=bank&container=/pci/&metadata.customer=c_1&id=tok_1&id=${UPPER_UUID}&page=2&size=5`,
        permissions: ['token:read'],
        // One id that cannot be one spoils the list (the path's query and this one are sent together).
        invalid: { query: { id: 'tok:1' }, field: 'id' },
        answer: {
          data: [token],
          pagination: { total_items: 6, page_number: 2, page_size: 5, total_pages: 2 },
        },
        // The query parsed once, at the edge (list-query.ts): repeated filters as lists, a uuid in lower case.
        calledWith: ({ origin }) => [
          origin,
          {
            filters: {
              ...filters,
              types: ['card', 'bank'],
              containers: ['/pci/'],
              metadata: [['customer', 'c_1']],
              anyOfIds: ['tok_1', UPPER_UUID.toLowerCase()],
            },
            page: 2,
            size: 5,
          },
        ],
        reaches: () => searches.list,
      },
      {
        method: 'post',
        path: '/tokens/search',
        permissions: ['token:search'],
        body: { query: 'type:card', page: 2 },
        invalid: { body: { query: '' }, field: 'query' },
        // A search reads: 200, not 201.
        status: 200,
        answer: { data: [], pagination: { total_items: 0, page_number: 2, page_size: 20, total_pages: 0 } },
        calledWith: ({ origin }) => [origin, { query: 'type:card', page: 2, size: 20 }],
        reaches: () => searches.search,
      },
      {
        method: 'get',
        path: '/v2/tokens',
        permissions: ['token:read'],
        query: { metadata: '{"k":"v"}', start: 'cursor', fingerprint: 'fp' },
        invalid: { query: { size: '1000' }, field: 'size' },
        answer: { data: [token], pagination: { page_size: 20, next: null } },
        calledWith: ({ origin }) => [
          origin,
          {
            filters: { ...filters, metadata: [['k', 'v']], fingerprints: ['fp'] },
            page: 1,
            size: 20,
            start: 'cursor',
          },
        ],
        reaches: () => searches.listV2,
      },
      {
        method: 'get',
        path: '/v2/tokens',
        permissions: ['token:read'],
        // v1's page is not a v2 parameter.
        invalid: { query: { page: '2' }, field: 'page' },
        calledWith: ({ origin }) => [origin, { filters, page: 1, size: 20 }],
        reaches: () => searches.listV2,
      },
      {
        method: 'post',
        path: '/v2/tokens/search',
        permissions: ['token:search'],
        body: { query: 'type:card', start: 'cursor', size: 50 },
        invalid: { body: { query: 7 }, field: 'query' },
        status: 200,
        calledWith: ({ origin }) => [origin, { query: 'type:card', start: 'cursor', size: 50 }],
        reaches: () => searches.searchV2,
      },
      {
        method: 'get',
        path: '/tokens/tok_1',
        permissions: ['token:read'],
        answer: token,
        calledWith: ({ origin }) => [origin, 'tok_1'],
        reaches: () => tokens.get,
      },
      {
        method: 'get',
        path: `/tokens/${UPPER_UUID}`,
        permissions: ['token:read'],
        // A uuid names the same token in either case: the service is given it in lower case.
        calledWith: ({ origin }) => [origin, UPPER_UUID.toLowerCase()],
        reaches: () => tokens.get,
      },
      {
        method: 'patch',
        path: '/tokens/tok_1',
        permissions: ['token:update'],
        body: { metadata: { colour: 'blue', old: null }, expires_at: null },
        invalid: { body: { metadata: { colour: 'blue' }, nope: 1 }, field: 'nope' },
        answer: token,
        calledWith: ({ origin }) => [
          origin,
          'tok_1',
          { metadata: { colour: 'blue', old: null }, expires_at: null },
        ],
        reaches: () => tokens.update,
      },
      {
        method: 'patch',
        path: '/tokens/tok_1',
        permissions: ['token:update'],
        body: { search_indexes: ['{{ data | last4 }}'] },
        invalid: { body: { data: 'new' }, field: 'data' },
        calledWith: ({ origin }) => [origin, 'tok_1', { search_indexes: ['{{ data | last4 }}'] }],
        reaches: () => tokens.update,
      },
      {
        method: 'delete',
        path: '/tokens/tok_1',
        permissions: ['token:delete'],
        calledWith: ({ origin }) => [origin, 'tok_1'],
        reaches: () => tokens.delete,
      },
    ],
  );

  it('answers 404 problem+json for a path that cannot be a token id, before the service', async () => {
    const res = await ctx.http.get('/tokens/tok:1').set('BT-API-KEY', ctx.key('private', ['token:read']));
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(tokens.get).not.toHaveBeenCalled();
  });

  it('names every bad list parameter in one 400', async () => {
    const res = await ctx.http
      .get('/tokens')
      .query({ size: '0', page: 'x', colour: 'blue' })
      .set('BT-API-KEY', ctx.key('private', ['token:read']));
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.errors).sort()).toEqual(['colour', 'page', 'size']);
    expect(searches.list).not.toHaveBeenCalled();
  });

  it('refuses an unauthorized session before the service (403)', async () => {
    const res = await ctx.http
      .get('/tokens/tok_1')
      .set('BT-API-KEY', ctx.key('session', ['token:read'], { authorized: false }));
    expect(res.status).toBe(403);
    expect(tokens.get).not.toHaveBeenCalled();
  });

  it('answers 415 problem+json for a body that is not JSON', async () => {
    const res = await ctx.http
      .post('/tokens')
      .set('BT-API-KEY', ctx.key('private', ['token:create']))
      .set('Content-Type', 'text/plain')
      .send('x');
    expect(res.status).toBe(415);
    expect(res.body.errors).toHaveProperty(['Content-Type']);
    expect(tokenizer.createOne).not.toHaveBeenCalled();
  });
});
