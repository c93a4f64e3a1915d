import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
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
  TransactionDto,
} from './transaction.dto';
import { TransactionQueriesService } from './transaction-queries.service';
import { TransactionsService } from './transactions.service';
import { TransactionCreationService } from './transaction-creation.service';
import { TransactionsApi } from './transactions.openapi';

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
  @TransactionsApi.create()
  create(@Origin() origin: RequestOrigin, @Body() body: CreateTransactionDto): Promise<TransactionDto> {
    return this.creation.create(origin, body);
  }

  @Get()
  @RequirePermissions('orchestration:transactions:read')
  @Audited('transaction', 'read')
  @TransactionsApi.list()
  list(
    @Principal() who: Principal,
    @Query() query: ListTransactionsQueryDto,
  ): Promise<OffsetPage<TransactionDto>> {
    return this.queries.list(who, query);
  }

  @Get(':id')
  @RequirePermissions('orchestration:transactions:read')
  @Audited('transaction', 'read')
  @TransactionsApi.get()
  get(@Principal() who: Principal, @TransactionId() id: string): Promise<TransactionDto> {
    return this.queries.get(who, id);
  }

  @Post(':id/capture')
  @HttpCode(200)
  @RequirePermissions('orchestration:transaction:capture')
  @TransactionsApi.capture()
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
  @TransactionsApi.void()
  void(@Origin() origin: RequestOrigin, @TransactionId() id: string): Promise<TransactionDto> {
    return this.transactions.void(origin, id);
  }

  @Post(':id/refunds')
  @RequirePermissions('orchestration:transaction:refund')
  @TransactionsApi.refund()
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
  @TransactionsApi.listRefunds()
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
  @TransactionsApi.listAttempts()
  listAttempts(@Principal() who: Principal, @TransactionId() id: string): Promise<AttemptDto[]> {
    return this.queries.listAttempts(who, id);
  }
}
