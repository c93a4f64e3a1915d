import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../../common/auth/principal';
import { ValidationException } from '../../../common/errors/domain.exception';
import { addFieldError, FieldErrors } from '../../../common/errors/problem.exception';
import { Clock } from '../../../common/jobs/clock';
import { offsetOf, offsetPage, OffsetPage } from '../../../common/pagination/offset-pagination';
import type { OffsetPaginationQueryDto } from '../../../common/pagination/offset-pagination.dto';
import { partOf } from '../../../common/unit-of-work/change';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { ConnectionsService, UsableConnection } from '../connections/connections.service';
import { supports } from '../formulas/formulas';
import { OrchestrationErrorCode, OrchestrationException } from '../orchestration.errors';
import { OPERATION_FAILURE, ProcessorUnavailable, withTimeout } from '../processors/processor-calls';
import type { OperationResult } from '../processors/processor.port';
import { ProcessorRegistry } from '../processors/processor.registry';
import { refundStatus } from '../transactions/transaction-state';
import { RelayJournal, relayRefundDto } from './relay-journal';
import type { CreateRelayRefundDto, RelayRefundDto } from './relay-refund.dto';
import { RelayRefundsRepository } from './relay-refunds.repository';
import { vendorPaymentIdProblem } from './vendor-payment-ids';

/**
 * Relay refunds: refunds of payments made at a vendor before the migration, which have no transaction
 * here, through one of the tenant's connections (docs/payments.md, "Relay refunds"). As a transaction's
 * refund, the refund is recorded `processing` (with its `relay:refund:created` event and audit row, and
 * pinned on the request's idempotency claim) before the vendor is called, outside any database
 * transaction; the vendor's answer is written in a second change. A process that dies in between leaves
 * the row for the settlement job, and a retry with the same key answers that row: the vendor is called
 * once per key, and every vendor idempotency key is derived from the relay refund's id (RelayJournal).
 */
@Injectable()
export class RelayRefundsService {
  private readonly logger = new Logger('RelayRefunds');

  constructor(
    private readonly refunds: RelayRefundsRepository,
    private readonly journal: RelayJournal,
    private readonly connections: ConnectionsService,
    private readonly processors: ProcessorRegistry,
    private readonly clock: Clock,
    private readonly work: UnitOfWork,
  ) {}

  async create(origin: RequestOrigin, body: CreateRelayRefundDto): Promise<RelayRefundDto> {
    const who = origin.actor;
    // A retry of this very request after it died having recorded its refund: that refund, as it stands.
    const resumed = origin.idempotency?.resumed;
    if (resumed) {
      const earlier = await this.refunds.find(who.tenantId, resumed);
      if (earlier) return relayRefundDto(earlier);
    }
    const connection = await this.connectionFor(who.tenantId, body);
    const refund = await this.work.transaction(partOf(origin), async (change) => {
      const row = await this.refunds.insert(change, {
        id: randomUUID(),
        tenantId: who.tenantId,
        connectionId: connection.row.id,
        vendorPaymentId: body.vendor_payment_id,
        amount: body.amount,
        currency: body.currency,
        reason: body.reason ?? null,
        createdAt: this.clock.now(),
      });
      this.journal.created(change, row);
      // Commits with the row: a retry after this request died answers it rather than refunding again.
      await change.pinResource(row.id);
      return row;
    });
    const result = await this.call(() =>
      this.processors.for(connection.row).refund({
        ...this.journal.request(refund, connection),
        ...(body.reason ? { reason: body.reason } : {}),
      }),
    );
    // Unanswered: the refund stays `processing` for the settlement job.
    if (result === undefined) return relayRefundDto(refund);
    const settled = await this.work.transaction(partOf(origin), (change) =>
      this.journal.settle(change, refund, outcomeOf(result), `Vendor answered the relay refund`),
    );
    // Settled meanwhile (a notification outran the answer): the refund as it now stands.
    return relayRefundDto(settled ?? (await this.refunds.find(who.tenantId, refund.id)) ?? refund);
  }

  async get(who: Principal, id: string): Promise<RelayRefundDto> {
    const row = await this.refunds.find(who.tenantId, id);
    if (!row) throw notFound();
    return relayRefundDto(row);
  }

  async list(who: Principal, query: OffsetPaginationQueryDto): Promise<OffsetPage<RelayRefundDto>> {
    const { rows, total } = await this.refunds.list(who.tenantId, offsetOf(query));
    return offsetPage(rows.map(relayRefundDto), total, query);
  }

  /**
   * The tenant's connection the refund goes through, once it may take it: available, refunding, and the
   * payment id in its vendor's form. Every refusal is a field error, thrown together (400).
   */
  private async connectionFor(tenantId: string, body: CreateRelayRefundDto): Promise<UsableConnection> {
    const errors: FieldErrors = {};
    const connection = await this.connections.loadForPayment(tenantId, body.connection_id);
    if (!connection) addFieldError(errors, 'connection_id', 'no such connection');
    else {
      const { row, formula } = connection;
      if (!row.active) addFieldError(errors, 'connection_id', 'the connection is not active');
      else if (row.status !== 'available')
        addFieldError(errors, 'connection_id', `the connection is ${row.status}, not available`);
      if (!supports(formula, 'refunds'))
        addFieldError(errors, 'connection_id', `${formula.id} does not support refunds`);
      const problem = vendorPaymentIdProblem(formula.id, body.vendor_payment_id);
      if (problem) addFieldError(errors, 'vendor_payment_id', problem);
    }
    if (Object.keys(errors).length || !connection) throw new ValidationException(errors);
    return connection;
  }

  /** The vendor's answer; undefined when the vendor may or may not have acted (left to settlement). */
  private async call(work: () => Promise<OperationResult>): Promise<OperationResult | undefined> {
    try {
      return await withTimeout(work());
    } catch (error) {
      if (error instanceof ProcessorUnavailable) {
        this.logger.warn({ err: error }, 'relay refund unanswered; left to settlement');
        return undefined;
      }
      this.logger.warn({ err: error }, 'relay refund failed');
      return OPERATION_FAILURE;
    }
  }
}

/** A vendor's answer as a relay refund's outcome (a `pending` one leaves it `processing`). */
export function outcomeOf(result: OperationResult | { status: 'not_found' }): {
  status: 'processing' | 'succeeded' | 'failed';
  vendorRefundId: string | null;
  errorCode: string | null;
} {
  const status = refundStatus(result);
  const vendorRefundId = 'vendorId' in result ? (result.vendorId ?? null) : null;
  const errorCode =
    status !== 'failed'
      ? null
      : result.status === 'not_found'
        ? 'unknown_to_vendor'
        : (result.errorCode ?? 'refund_failed');
  return { status, vendorRefundId, errorCode };
}

const notFound = () => new OrchestrationException(OrchestrationErrorCode.NotFound, 'Relay refund not found');
