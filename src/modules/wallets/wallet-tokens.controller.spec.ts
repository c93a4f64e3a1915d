import { controllerApp, ControllerApp, describeRoutes, fakeOf } from '../../../test/support/controller-app';
import { WalletTokensController } from './wallet-tokens.controller';
import { WalletTokensService } from './wallet-tokens.service';

describe('WalletTokensController', () => {
  const wallets = fakeOf<WalletTokensService>(['applePay', 'googlePay']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [WalletTokensController],
      [{ provide: WalletTokensService, useValue: wallets }],
    );
  });
  afterAll(() => ctx.close());

  const paymentData = { version: 'EC_v1', data: 'AA==', signature: 'AA==', header: {} };
  const token = { id: 'tok', type: 'network_token', mask: { number: 'XXXXXXXXXXXX1111' } };
  // token:create, as POST /tokens: public keys and sessions included.
  describeRoutes(
    () => ctx,
    [
      {
        kind: 'public',
        method: 'post',
        path: '/wallets/apple-pay/tokens',
        permissions: ['token:create'],
        body: { payment_data: paymentData },
        invalid: { body: { payment_data: 'EC_v1' }, field: 'payment_data' },
        answer: token,
        reaches: () => wallets.applePay,
        calledWith: ({ origin }) => [origin, paymentData],
      },
      {
        kind: 'session',
        method: 'post',
        path: '/wallets/google-pay/tokens',
        permissions: ['token:create'],
        body: { token: '{"protocolVersion":"ECv2"}' },
        invalid: { body: { token: { protocolVersion: 'ECv2' } }, field: 'token' },
        answer: token,
        reaches: () => wallets.googlePay,
        calledWith: ({ origin }) => [origin, '{"protocolVersion":"ECv2"}'],
      },
      {
        method: 'post',
        path: '/wallets/google-pay/tokens',
        permissions: ['token:create'],
        body: { token: 'x' },
        answer: token,
        reaches: () => wallets.googlePay,
        calledWith: ({ origin }) => [origin, 'x'],
      },
    ],
  );
});
