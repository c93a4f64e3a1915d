import { Injectable } from '@nestjs/common';
import type { Principal } from '../../../common/auth/principal';
import type { Change } from '../../../common/unit-of-work/change';
import { offsetOf, offsetPage, OffsetPage } from '../../../common/pagination/offset-pagination';
import { TokensService } from '../../tokens/tokens.service';
import { OrchestrationException } from '../orchestration.errors';
import { ApprovalLinks } from './approval-links';
import { RefundsRepository } from './refunds.repository';
import { AttemptsRepository } from './attempts.repository';
import { attemptDto, refundDto, transactionDto } from './transaction.mapper';
import type { AttemptDto, ListTransactionsQueryDto, RefundDto, TransactionDto } from './transaction.dto';
import { TransactionRow, TransactionsRepository } from './transactions.repository';

/** The read side of transactions, their refunds and attempts: pages, one transaction, and the transaction object. */
@Injectable()
export class TransactionQueriesService {
  constructor(
    private readonly transactions: TransactionsRepository,
    private readonly refunds: RefundsRepository,
    private readonly approvals: ApprovalLinks,
    private readonly tokens: TokensService,
    private readonly attempts: AttemptsRepository,
  ) {}

  async get(who: Principal, id: string): Promise<TransactionDto> {
    return this.toDto(who, await this.find(who.tenantId, id));
  }

  async list(who: Principal, query: ListTransactionsQueryDto): Promise<OffsetPage<TransactionDto>> {
    const { rows, total } = await this.transactions.list(
      who.tenantId,
      {
        status: query.status,
        connectionId: query.connection_id,
        externalIdentifier: query.external_identifier,
        buyerId: query.buyer_id,
      },
      offsetOf(query),
    );
    const readable = await this.tokens.readableTokens(
      who,
      rows.map((row) => row.token_id),
    );
    return offsetPage(
      await Promise.all(rows.map((row) => this.present(row, readable.has(row.token_id)))),
      total,
      query,
    );
  }

  async listRefunds(
    who: Principal,
    id: string,
    query: { page: number; size: number },
  ): Promise<OffsetPage<RefundDto>> {
    await this.find(who.tenantId, id);
    const { rows, total } = await this.refunds.list(who.tenantId, id, offsetOf(query));
    return offsetPage(rows.map(refundDto), total, query);
  }

  /** A transaction's attempts, in order (none for one a rule declined). */
  async listAttempts(who: Principal, id: string): Promise<AttemptDto[]> {
    await this.find(who.tenantId, id);
    return (await this.attempts.list(who.tenantId, id)).map(attemptDto);
  }

  /**
   * The transaction object as the API returns it to `who`: with its approval link while one is pending,
   * and the card's fingerprint only if `who` may read the token now.
   */
  async toDto(who: Principal, row: TransactionRow): Promise<TransactionDto> {
    const readable = await this.tokens.readableTokens(who, [row.token_id]);
    return this.present(row, readable.has(row.token_id));
  }

  private async present(row: TransactionRow, readable: boolean): Promise<TransactionDto> {
    return transactionDto(row, await this.approvals.urlOf(row), readable);
  }

  /** A tenant's transaction, or the 404. */
  async find(tenantId: string, id: string): Promise<TransactionRow> {
    const row = await this.transactions.find(tenantId, id);
    if (!row) throw OrchestrationException.transactionNotFound();
    return row;
  }

  /** A tenant's transaction locked until the change ends, or the 404. */
  async lock(change: Change, tenantId: string, id: string): Promise<TransactionRow> {
    const row = await this.transactions.lock(change, tenantId, id);
    if (!row) throw OrchestrationException.transactionNotFound();
    return row;
  }
}
