import { controllerApp, ControllerApp, fakeOf } from '../../../../test/support/controller-app';
import { AdyenNotificationsController } from './adyen-notifications.controller';
import { AdyenNotificationsService } from './adyen-notifications.service';

describe('AdyenNotificationsController (public: Adyen has no key of ours)', () => {
  const notifications = fakeOf<AdyenNotificationsService>(['receive']);
  let ctx: ControllerApp;
  const path = '/orchestration/vendors/adyen/notifications';

  beforeAll(async () => {
    ctx = await controllerApp(
      [AdyenNotificationsController],
      [{ provide: AdyenNotificationsService, useValue: notifications }],
    );
  });
  afterAll(() => ctx.close());
  beforeEach(() => jest.clearAllMocks());

  it('answers [accepted] once the service has taken the batch', async () => {
    const res = await ctx.http.post(path).send({ live: 'false', notificationItems: [] });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toBe('[accepted]');
    expect(notifications.receive).toHaveBeenCalledTimes(1);
  });

  it('is 415 problem+json for a body that is not JSON, before the service', async () => {
    const res = await ctx.http.post(path).set('Content-Type', 'text/plain').send('x');
    expect(res.status).toBe(415);
    expect(res.body.errors).toHaveProperty(['Content-Type']);
    expect(notifications.receive).not.toHaveBeenCalled();
  });

  it('is 400 problem+json for malformed JSON', async () => {
    const res = await ctx.http.post(path).set('Content-Type', 'application/json').send('{');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('malformed_json');
    expect(notifications.receive).not.toHaveBeenCalled();
  });
});
