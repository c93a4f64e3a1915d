import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../test/support/controller-app';
import { ApplePayMerchantKeysController, GooglePayMerchantKeysController } from './merchant-keys.controller';
import { MerchantKeysService } from './merchant-keys.service';

describe('ApplePayMerchantKeysController and GooglePayMerchantKeysController', () => {
  const keys = fakeOf<MerchantKeysService>([
    'createApplePay',
    'setCertificate',
    'createGooglePay',
    'list',
    'get',
    'delete',
  ]);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [ApplePayMerchantKeysController, GooglePayMerchantKeysController],
      [{ provide: MerchantKeysService, useValue: keys }],
    );
  });
  afterAll(() => ctx.close());

  const m = { kind: 'management' as const, permissions: ['wallet:manage'] };
  const key = { id: ID, wallet: 'apple_pay', status: 'pending', public_key: 'BA==' };
  const page = { pagination: { total_items: 1, page_number: 1, page_size: 5, total_pages: 1 }, data: [key] };
  const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  describeRoutes(
    () => ctx,
    [
      {
        ...m,
        method: 'post',
        path: '/wallets/apple-pay/merchant-keys',
        answer: { ...key, csr: '-----BEGIN CERTIFICATE REQUEST-----' },
        reaches: () => keys.createApplePay,
        calledWith: ({ origin }) => [origin],
      },
      {
        ...m,
        method: 'put',
        path: `/wallets/apple-pay/merchant-keys/${ID}`,
        body: { certificate: PEM },
        invalid: { body: { certificate: 42 }, field: 'certificate' },
        answer: { ...key, status: 'active' },
        reaches: () => keys.setCertificate,
        calledWith: ({ origin }) => [origin, ID, PEM],
      },
      {
        ...m,
        method: 'get',
        path: '/wallets/apple-pay/merchant-keys',
        query: { page: '1', size: '5' },
        invalid: { query: { size: '0' }, field: 'size' },
        answer: page,
        reaches: () => keys.list,
        calledWith: ({ who }) => [who, 'apple_pay', { page: 1, size: 5 }],
      },
      {
        ...m,
        method: 'get',
        path: `/wallets/apple-pay/merchant-keys/${ID}`,
        answer: key,
        reaches: () => keys.get,
        calledWith: ({ who }) => [who, 'apple_pay', ID],
      },
      {
        ...m,
        method: 'delete',
        path: `/wallets/apple-pay/merchant-keys/${ID}`,
        reaches: () => keys.delete,
        calledWith: ({ origin }) => [origin, 'apple_pay', ID],
      },
      {
        ...m,
        method: 'post',
        path: '/wallets/google-pay/merchant-keys',
        body: { gateway_merchant_id: 'acme' },
        invalid: { body: { gateway_merchant_id: 'two words' }, field: 'gateway_merchant_id' },
        answer: { ...key, wallet: 'google_pay', status: 'active', gateway_merchant_id: 'acme' },
        reaches: () => keys.createGooglePay,
        calledWith: ({ origin }) => [origin, { gateway_merchant_id: 'acme' }],
      },
      {
        ...m,
        method: 'get',
        path: '/wallets/google-pay/merchant-keys',
        answer: page,
        reaches: () => keys.list,
        calledWith: ({ who }) => [who, 'google_pay', { page: 1, size: 20 }],
      },
      {
        ...m,
        method: 'get',
        path: `/wallets/google-pay/merchant-keys/${ID}`,
        answer: key,
        reaches: () => keys.get,
        calledWith: ({ who }) => [who, 'google_pay', ID],
      },
      {
        ...m,
        method: 'delete',
        path: `/wallets/google-pay/merchant-keys/${ID}`,
        reaches: () => keys.delete,
        calledWith: ({ origin }) => [origin, 'google_pay', ID],
      },
    ],
  );
});
