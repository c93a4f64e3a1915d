import { ApiDocs } from '../../../common/api-docs.decorator';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { AttemptDto, RefundDto, RefundPageDto, TransactionDto, TransactionPageDto } from './transaction.dto';

/**
 * The OpenAPI description of the transactions routes, one decorator per route, so that the controller
 * reads as routing only.
 */

/** The request and answer of each route, by the controller's method name. */
export const TransactionsApi = {
  create: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createTransaction',
        summary: 'Pay with a card token, through the connection named or the one the routing rules choose',
        description:
          '201 whatever the outcome: a declined payment is a created transaction (a `decline-early` rule declines it ' +
          'with `declined_by_rule`). Without `connection_id` the first matching `route-transaction` rule chooses the ' +
          'connection; none: a 400 `no_connection_available`. When the buyer must approve ' +
          '(3-D Secure), the status is `buyer_approval_pending` and `payment_method.approval_url` is the page to send ' +
          "the buyer to. `token:use` is checked on the token through the caller's rules.",
      }),
      ApiCreatedResponse({ type: TransactionDto }),
    ),
  list: () =>
    ApiDocs(
      ApiOperation({ operationId: 'listTransactions', summary: 'List transactions, newest first' }),
      ApiOkResponse({ type: TransactionPageDto }),
    ),
  get: () =>
    ApiDocs(
      ApiOperation({ operationId: 'getTransaction', summary: 'Get a transaction' }),
      ApiOkResponse({ type: TransactionDto }),
    ),
  capture: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'captureTransaction',
        summary: 'Capture an authorized transaction',
        description: 'The whole authorized amount unless `amount` says less (which needs `partial_capture`).',
      }),
      ApiOkResponse({ type: TransactionDto }),
    ),
  void: () =>
    ApiDocs(
      ApiOperation({ operationId: 'voidTransaction', summary: 'Void an authorized, uncaptured transaction' }),
      ApiOkResponse({ type: TransactionDto }),
    ),
  refund: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createRefund',
        summary: 'Refund a captured transaction',
        description: 'What is left to refund unless `amount` says less (which needs `partial_refunds`).',
      }),
      ApiCreatedResponse({ type: RefundDto }),
    ),
  listRefunds: () =>
    ApiDocs(
      ApiOperation({ operationId: 'listRefunds', summary: "List a transaction's refunds" }),
      ApiOkResponse({ type: RefundPageDto }),
    ),
  listAttempts: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listTransactionAttempts',
        summary: "List a transaction's attempts, in order (a plain array)",
        description:
          'Each try of the authorization at one connection. A transaction made with `connection_id` has one; one a ' +
          'rule declined has none.',
      }),
      ApiOkResponse({ type: [AttemptDto] }),
    ),
};
