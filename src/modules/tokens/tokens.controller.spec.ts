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

  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: '/tokenize',
        permissions: ['token:create'],
        body: { email: 'jane@example.com' },
        reaches: () => tokenizer.tokenize,
      },
      {
        method: 'post',
        path: '/tokens',
        permissions: ['token:create'],
        body: { type: 'token', data: 'x' },
        reaches: () => tokenizer.createOne,
      },
      {
        method: 'get',
        path: '/tokens',
        permissions: ['token:read'],
        invalid: { query: { size: '0' }, field: 'size' },
        reaches: () => searches.list,
      },
      {
        method: 'post',
        path: '/tokens/search',
        permissions: ['token:search'],
        body: { query: 'type:card' },
        invalid: { body: { query: '' }, field: 'query' },
        reaches: () => searches.search,
      },
      {
        method: 'get',
        path: '/v2/tokens',
        permissions: ['token:read'],
        invalid: { query: { size: '1000' }, field: 'size' },
        reaches: () => searches.listV2,
      },
      {
        method: 'post',
        path: '/v2/tokens/search',
        permissions: ['token:search'],
        body: { query: 'type:card' },
        invalid: { body: { query: 7 }, field: 'query' },
        reaches: () => searches.searchV2,
      },
      { method: 'get', path: '/tokens/tok_1', permissions: ['token:read'], reaches: () => tokens.get },
      {
        method: 'patch',
        path: '/tokens/tok_1',
        permissions: ['token:update'],
        body: { metadata: { colour: 'blue' } },
        invalid: { body: { metadata: { colour: 'blue' }, nope: 1 }, field: 'nope' },
        reaches: () => tokens.update,
      },
      {
        method: 'delete',
        path: '/tokens/tok_1',
        permissions: ['token:delete'],
        reaches: () => tokens.delete,
      },
    ],
  );

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
