import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../../test/support/controller-app';
import { TransactionQueriesService } from './transaction-queries.service';
import { TransactionsController } from './transactions.controller';
import { TransactionsService } from './transactions.service';
import { TransactionCreationService } from './transaction-creation.service';

describe('TransactionsController', () => {
  const transactions = fakeOf<TransactionsService>(['capture', 'void', 'refund']);
  const creation = fakeOf<TransactionCreationService>(['create']);
  const queries = fakeOf<TransactionQueriesService>(['list', 'get', 'listRefunds', 'listAttempts']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [TransactionsController],
      [
        { provide: TransactionsService, useValue: transactions },
        { provide: TransactionQueriesService, useValue: queries },
        { provide: TransactionCreationService, useValue: creation },
      ],
    );
  });
  afterAll(() => ctx.close());

  const payment = { amount: 1000, connection_id: ID, currency: 'USD', token: 'tok_1' };
  const BUYER = '22222222-2222-4222-8222-222222222222';
  const base = '/orchestration/transactions';
  const transaction = { type: 'transaction', id: ID, status: 'authorization_succeeded', amount: 1000 };
  const refund = { type: 'refund', id: BUYER, transaction_id: ID, amount: 400, status: 'succeeded' };
  const read = ['orchestration:transactions:read'];
  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: base,
        permissions: ['token:use'],
        body: { ...payment, intent: 'capture', metadata: { order: '42' }, buyer_id: BUYER, store: true },
        invalid: { body: { ...payment, currency: 'usd' }, field: 'currency' },
        answer: transaction,
        reaches: () => creation.create,
        calledWith: ({ origin }) => [
          origin,
          { ...payment, intent: 'capture', metadata: { order: '42' }, buyer_id: BUYER, store: true },
        ],
      },
      {
        method: 'get',
        path: base,
        permissions: read,
        query: { status: 'capture_succeeded', buyer_id: BUYER, external_identifier: 'order-42', size: '10' },
        invalid: { query: { status: 'dreaming' }, field: 'status' },
        answer: {
          data: [transaction],
          pagination: { total_items: 1, page_number: 1, page_size: 10, total_pages: 1 },
        },
        reaches: () => queries.list,
        calledWith: ({ who }) => [
          who,
          {
            status: 'capture_succeeded',
            buyer_id: BUYER,
            external_identifier: 'order-42',
            page: 1,
            size: 10,
          },
        ],
      },
      {
        method: 'get',
        path: `${base}/${ID}`,
        permissions: read,
        answer: transaction,
        reaches: () => queries.get,
        calledWith: ({ who }) => [who, ID],
      },
      {
        method: 'post',
        path: `${base}/${ID}/capture`,
        permissions: ['orchestration:transaction:capture'],
        body: { amount: 500 },
        invalid: { body: { amount: 0 }, field: 'amount' },
        status: 200,
        answer: { ...transaction, status: 'capture_succeeded' },
        reaches: () => transactions.capture,
        // The amount alone, not the body.
        calledWith: ({ origin }) => [origin, ID, 500],
      },
      {
        method: 'post',
        path: `${base}/${ID}/capture`,
        permissions: ['orchestration:transaction:capture'],
        body: {},
        invalid: { body: { amount: 1.5 }, field: 'amount' },
        status: 200,
        reaches: () => transactions.capture,
        // No amount: the whole authorized amount, which the service decides.
        calledWith: ({ origin }) => [origin, ID, undefined],
      },
      {
        method: 'post',
        path: `${base}/${ID}/void`,
        permissions: ['token:use'],
        status: 200,
        answer: { ...transaction, status: 'authorization_voided' },
        reaches: () => transactions.void,
        calledWith: ({ origin }) => [origin, ID],
      },
      {
        method: 'post',
        path: `${base}/${ID}/refunds`,
        permissions: ['orchestration:transaction:refund'],
        body: { amount: 400 },
        invalid: { body: { amount: 'all' }, field: 'amount' },
        answer: refund,
        reaches: () => transactions.refund,
        calledWith: ({ origin }) => [origin, ID, 400],
      },
      {
        method: 'post',
        path: `${base}/${ID}/refunds`,
        permissions: ['orchestration:transaction:refund'],
        body: {},
        reaches: () => transactions.refund,
        calledWith: ({ origin }) => [origin, ID, undefined],
      },
      {
        method: 'get',
        path: `${base}/${ID}/refunds`,
        permissions: read,
        query: { page: '2', size: '5' },
        invalid: { query: { page: '0' }, field: 'page' },
        answer: {
          data: [refund],
          pagination: { total_items: 6, page_number: 2, page_size: 5, total_pages: 2 },
        },
        reaches: () => queries.listRefunds,
        calledWith: ({ who }) => [who, ID, { page: 2, size: 5 }],
      },
      {
        method: 'get',
        path: `${base}/${ID}/attempts`,
        permissions: read,
        answer: [{ type: 'attempt', id: BUYER, connection_id: ID, status: 'succeeded' }],
        reaches: () => queries.listAttempts,
        calledWith: ({ who }) => [who, ID],
      },
    ],
  );

  it('answers 404 problem+json for a transaction id that is not a uuid, before the service', async () => {
    const key = ctx.key('private', [...read, 'orchestration:transaction:capture']);
    for (const req of [
      ctx.http.get(`${base}/order-42`),
      ctx.http.post(`${base}/order-42/capture`).send({}),
    ]) {
      const res = await req.set('BT-API-KEY', key);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect(queries.get).not.toHaveBeenCalled();
    expect(transactions.capture).not.toHaveBeenCalled();
  });
});
