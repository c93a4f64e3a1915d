import { unauthorized } from '../../../common/errors/problem.exception';
import { controllerApp, ControllerApp, fakeOf } from '../../../../test/support/controller-app';
import { CheckoutNotificationsController } from './checkout-notifications.controller';
import { CheckoutNotificationsService } from './checkout-notifications.service';

describe('CheckoutNotificationsController (public: Checkout.com has no key of ours)', () => {
  const notifications = fakeOf<CheckoutNotificationsService>(['receive']);
  let ctx: ControllerApp;
  const path = '/orchestration/notifications/checkout';
  // As Checkout.com sends it: the signature covers these very bytes (spacing included).
  const raw = '{"type":"payment_approved",  "data":{"id":"pay_abc","reference":"R1"}}';

  beforeAll(async () => {
    ctx = await controllerApp(
      [CheckoutNotificationsController],
      [{ provide: CheckoutNotificationsService, useValue: notifications }],
    );
  });
  afterAll(() => ctx.close());
  beforeEach(() => jest.clearAllMocks());

  it('hands the service the body as sent, byte for byte, with the Cko-Signature header; answers 200', async () => {
    const res = await ctx.http
      .post(path)
      .set('Content-Type', 'application/json')
      .set('Cko-Signature', 'ab12')
      .send(raw);
    expect(res.status).toBe(200);
    expect(notifications.receive).toHaveBeenCalledTimes(1);
    const [body, signature] = notifications.receive.mock.calls[0] as [unknown, unknown];
    expect(Buffer.isBuffer(body) && body.toString('utf8')).toBe(raw);
    expect(signature).toBe('ab12');
  });

  it("answers the service's refusal (a wrong or missing signature) as a 401 problem+json", async () => {
    notifications.receive.mockRejectedValueOnce(unauthorized('refused'));
    const res = await ctx.http.post(path).set('Content-Type', 'application/json').send(raw);
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(notifications.receive.mock.calls[0][1]).toBeUndefined();
  });
});
