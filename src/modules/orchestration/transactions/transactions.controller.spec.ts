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
  const queries = fakeOf<TransactionQueriesService>(['list', 'get', 'listRefunds']);
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
  const base = '/orchestration/transactions';
  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: base,
        permissions: ['token:use'],
        body: payment,
        invalid: { body: { ...payment, currency: 'usd' }, field: 'currency' },
        reaches: () => creation.create,
      },
      {
        method: 'get',
        path: base,
        permissions: ['orchestration:transactions:read'],
        invalid: { query: { status: 'dreaming' }, field: 'status' },
        reaches: () => queries.list,
      },
      {
        method: 'get',
        path: `${base}/${ID}`,
        permissions: ['orchestration:transactions:read'],
        reaches: () => queries.get,
      },
      {
        method: 'post',
        path: `${base}/${ID}/capture`,
        permissions: ['orchestration:transaction:capture'],
        body: { amount: 500 },
        invalid: { body: { amount: 0 }, field: 'amount' },
        reaches: () => transactions.capture,
      },
      {
        method: 'post',
        path: `${base}/${ID}/void`,
        permissions: ['token:use'],
        reaches: () => transactions.void,
      },
      {
        method: 'post',
        path: `${base}/${ID}/refunds`,
        permissions: ['orchestration:transaction:refund'],
        body: {},
        invalid: { body: { amount: 'all' }, field: 'amount' },
        reaches: () => transactions.refund,
      },
      {
        method: 'get',
        path: `${base}/${ID}/refunds`,
        permissions: ['orchestration:transactions:read'],
        invalid: { query: { page: '0' }, field: 'page' },
        reaches: () => queries.listRefunds,
      },
    ],
  );
});
