import { controllerApp, ControllerApp, describeRoutes, fakeOf } from '../../../test/support/controller-app';
import { SessionsController } from './sessions.controller';
import { SessionsService } from './sessions.service';

describe('SessionsController', () => {
  const sessions = fakeOf<SessionsService>(['create', 'authorize']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp([SessionsController], [{ provide: SessionsService, useValue: sessions }]);
  });
  afterAll(() => ctx.close());

  const rule = {
    priority: 1,
    conditions: [{ attribute: 'id', operator: 'equals', value: 'tok_1' }],
    transform: 'mask',
    permissions: ['token:read'],
  };
  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: '/sessions',
        kind: 'public',
        keyKinds: ['public'],
        answer: { session_key: 'key', nonce: 'nonce', expires_at: '2030-01-01T00:00:00.000Z' },
        reaches: () => sessions.create,
        // No body: the public key's principal is all the service needs.
        calledWith: ({ origin }) => [origin],
      },
      {
        method: 'post',
        path: '/sessions/authorize',
        kind: 'private',
        keyKinds: ['private'],
        body: {
          nonce: 'abc',
          permissions: ['token:read'],
          rules: [rule],
          expires_at: '2030-01-01T00:02:00Z',
        },
        invalid: { body: { nonce: 'abc', expires_at: 'soon' }, field: 'expires_at' },
        status: 204,
        reaches: () => sessions.authorize,
        calledWith: ({ origin }) => [
          origin,
          { nonce: 'abc', permissions: ['token:read'], rules: [rule], expires_at: '2030-01-01T00:02:00Z' },
        ],
      },
      {
        method: 'post',
        path: '/sessions/authorize',
        kind: 'private',
        keyKinds: ['private'],
        body: { nonce: 'abc' },
        invalid: { body: { nonce: 5 }, field: 'nonce' },
        status: 204,
        reaches: () => sessions.authorize,
        calledWith: ({ origin }) => [origin, { nonce: 'abc' }],
      },
    ],
  );

  it('answers the session key, nonce and expiry only', async () => {
    sessions.create.mockResolvedValueOnce({
      session_key: 'k',
      nonce: 'n',
      expires_at: '2030-01-01T00:00:00.000Z',
      id: 'not shown',
    });
    const res = await ctx.http.post('/sessions').set('BT-API-KEY', ctx.key('public'));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ session_key: 'k', nonce: 'n', expires_at: '2030-01-01T00:00:00.000Z' });
  });

  it('answers 204 without a body whatever the service returns', async () => {
    sessions.authorize.mockResolvedValueOnce({ id: 'not shown' });
    const res = await ctx.http
      .post('/sessions/authorize')
      .set('BT-API-KEY', ctx.key('private'))
      .send({ nonce: 'abc' });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
  });
});
