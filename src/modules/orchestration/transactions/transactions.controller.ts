import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '../../../common/audit/audited.decorator';
import { Principal } from '../../../common/auth/principal';
import { RequirePermissions } from '../../../common/auth/require-permissions.decorator';
import type { OffsetPage } from '../../../common/pagination/offset-pagination';
import { OffsetPaginationQueryDto } from '../../../common/pagination/offset-pagination.dto';
import { ParseIdPipe } from '../../../common/pipes/parse-id.pipe';
import { Origin, RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import {
  AttemptDto,
  CaptureTransactionDto,
  CreateRefundDto,
  CreateTransactionDto,
  ListTransactionsQueryDto,
  RefundDto,
  RefundPageDto,
  TransactionDto,
  TransactionPageDto,
} from './transaction.dto';
import { TransactionQueriesService } from './transaction-queries.service';
import { TransactionsService } from './transactions.service';
import { TransactionCreationService } from './transaction-creation.service';

const TransactionId = () => Param('id', new ParseIdPipe('Transaction'));

@ApiTags('Orchestration')
@Controller('orchestration/transactions')
export class TransactionsController {
  constructor(
    private readonly transactions: TransactionsService,
    private readonly queries: TransactionQueriesService,
    private readonly creation: TransactionCreationService,
  ) {}

  @Post()
  @RequirePermissions('token:use', { perToken: true })
  @ApiOperation({
    operationId: 'createTransaction',
    summary: 'Pay with a card token, through the connection named or the one the routing rules choose',
    description:
      '201 whatever the outcome: a declined payment is a created transaction (a `decline-early` rule declines it ' +
      'with `declined_by_rule`). Without `connection_id` the first matching `route-transaction` rule chooses the ' +
      'connection; none: a 400 `no_connection_available`. When the buyer must approve ' +
      '(3-D Secure), the status is `buyer_approval_pending` and `payment_method.approval_url` is the page to send ' +
      "the buyer to. `token:use` is checked on the token through the caller's rules.",
  })
  @ApiCreatedResponse({ type: TransactionDto })
  create(@Origin() origin: RequestOrigin, @Body() body: CreateTransactionDto): Promise<TransactionDto> {
    return this.creation.create(origin, body);
  }

  @Get()
  @RequirePermissions('orchestration:transactions:read')
  @Audited('transaction', 'read')
  @ApiOperation({ operationId: 'listTransactions', summary: 'List transactions, newest first' })
  @ApiOkResponse({ type: TransactionPageDto })
  list(
    @Principal() who: Principal,
    @Query() query: ListTransactionsQueryDto,
  ): Promise<OffsetPage<TransactionDto>> {
    return this.queries.list(who, query);
  }

  @Get(':id')
  @RequirePermissions('orchestration:transactions:read')
  @Audited('transaction', 'read')
  @ApiOperation({ operationId: 'getTransaction', summary: 'Get a transaction' })
  @ApiOkResponse({ type: TransactionDto })
  get(@Principal() who: Principal, @TransactionId() id: string): Promise<TransactionDto> {
    return this.queries.get(who, id);
  }

  @Post(':id/capture')
  @HttpCode(200)
  @RequirePermissions('orchestration:transaction:capture')
  @ApiOperation({
    operationId: 'captureTransaction',
    summary: 'Capture an authorized transaction',
    description: 'The whole authorized amount unless `amount` says less (which needs `partial_capture`).',
  })
  @ApiOkResponse({ type: TransactionDto })
  capture(
    @Origin() origin: RequestOrigin,
    @TransactionId() id: string,
    @Body() body: CaptureTransactionDto,
  ): Promise<TransactionDto> {
    return this.transactions.capture(origin, id, body.amount);
  }

  @Post(':id/void')
  @HttpCode(200)
  @RequirePermissions('token:use', { perToken: true })
  @ApiOperation({ operationId: 'voidTransaction', summary: 'Void an authorized, uncaptured transaction' })
  @ApiOkResponse({ type: TransactionDto })
  void(@Origin() origin: RequestOrigin, @TransactionId() id: string): Promise<TransactionDto> {
    return this.transactions.void(origin, id);
  }

  @Post(':id/refunds')
  @RequirePermissions('orchestration:transaction:refund')
  @ApiOperation({
    operationId: 'createRefund',
    summary: 'Refund a captured transaction',
    description: 'What is left to refund unless `amount` says less (which needs `partial_refunds`).',
  })
  @ApiCreatedResponse({ type: RefundDto })
  refund(
    @Origin() origin: RequestOrigin,
    @TransactionId() id: string,
    @Body() body: CreateRefundDto,
  ): Promise<RefundDto> {
    return this.transactions.refund(origin, id, body.amount);
  }

  @Get(':id/refunds')
  @RequirePermissions('orchestration:transactions:read')
  @Audited('transaction', 'read', { message: 'Transaction refunds listed' })
  @ApiOperation({ operationId: 'listRefunds', summary: "List a transaction's refunds" })
  @ApiOkResponse({ type: RefundPageDto })
  listRefunds(
    @Principal() who: Principal,
    @TransactionId() id: string,
    @Query() query: OffsetPaginationQueryDto,
  ): Promise<OffsetPage<RefundDto>> {
    return this.queries.listRefunds(who, id, query);
  }

  @Get(':id/attempts')
  @RequirePermissions('orchestration:transactions:read')
  @Audited('transaction', 'read', { message: 'Transaction attempts listed' })
  @ApiOperation({
    operationId: 'listTransactionAttempts',
    summary: "List a transaction's attempts, in order (a plain array)",
    description:
      'Each try of the authorization at one connection. A transaction made with `connection_id` has one; one a ' +
      'rule declined has none.',
  })
  @ApiOkResponse({ type: [AttemptDto] })
  listAttempts(@Principal() who: Principal, @TransactionId() id: string): Promise<AttemptDto[]> {
    return this.queries.listAttempts(who, id);
  }
}
