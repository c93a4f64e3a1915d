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
      },
      {
        method: 'post',
        path: '/sessions/authorize',
        kind: 'private',
        keyKinds: ['private'],
        body: { nonce: 'abc', permissions: ['token:read'] },
        invalid: { body: { nonce: 5 }, field: 'nonce' },
        reaches: () => sessions.authorize,
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
});
