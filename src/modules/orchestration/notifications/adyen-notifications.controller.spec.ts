import { unauthorized } from '../../../common/errors/problem.exception';
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

  const batch = {
    live: 'false',
    notificationItems: [
      {
        NotificationRequestItem: {
          eventCode: 'AUTHORISATION',
          success: 'true',
          pspReference: 'PSP1',
          additionalData: { hmacSignature: 'c2ln' },
        },
      },
    ],
  };

  it('answers [accepted] once the service has taken the batch, handed to it as sent', async () => {
    const res = await ctx.http.post(path).send(batch);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toBe('[accepted]');
    // The body is not validated here: the service checks each item's signature against it, field for field.
    expect(notifications.receive).toHaveBeenCalledTimes(1);
    expect(notifications.receive).toHaveBeenCalledWith(batch);
  });

  it("answers the service's refusal as problem+json, without [accepted]", async () => {
    notifications.receive.mockRejectedValueOnce(unauthorized('refused'));
    const res = await ctx.http.post(path).send(batch);
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.text).not.toContain('[accepted]');
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
