import {
  controllerApp,
  ControllerApp,
  describeRoutes,
  fakeOf,
  ID,
} from '../../../../test/support/controller-app';
import { FlowEvaluationController } from './flow-evaluation.controller';
import { TransactionCreationService } from './transaction-creation.service';

describe('FlowEvaluationController', () => {
  const creation = fakeOf<TransactionCreationService>(['evaluate']);
  let ctx: ControllerApp;

  beforeAll(async () => {
    ctx = await controllerApp(
      [FlowEvaluationController],
      [{ provide: TransactionCreationService, useValue: creation }],
    );
  });
  afterAll(() => ctx.close());

  const payment = { amount: 1000, currency: 'USD', token: 'tok_1', metadata: { order: '42' } };
  describeRoutes(
    () => ctx,
    [
      {
        method: 'post',
        path: '/orchestration/flows/card-transaction/evaluate',
        permissions: ['orchestration:flows:read', 'token:use'],
        body: payment,
        invalid: { body: { ...payment, amount: -1 }, field: 'amount' },
        answer: { declined: false, rule_id: ID, connections: [] },
        // A dry run: 200, not 201; the service is given the caller (no change is opened) and the body.
        status: 200,
        reaches: () => creation.evaluate,
        calledWith: ({ who }) => [who, payment],
      },
    ],
  );
});
