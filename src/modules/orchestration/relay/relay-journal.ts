import { Injectable } from '@nestjs/common';
import type { EventType } from '../../../common/events/event-outbox';
import { Clock } from '../../../common/jobs/clock';
import type { Change } from '../../../common/unit-of-work/change';
import type { UsableConnection } from '../connections/connections.service';
import type { PollRequest, RefundRequest } from '../processors/processor.port';
import { toReconciliationId } from '../processors/reconciliation';
import type { RelayRefundDto } from './relay-refund.dto';
import { RelayRefundRow, RelayRefundsRepository, RelayRefundStatus } from './relay-refunds.repository';

/** What settles a relay refund: its status, the vendor's refund id when named, and why it failed. */
export interface RelayOutcome {
  status: RelayRefundStatus;
  vendorRefundId: string | null;
  errorCode: string | null;
}

export function relayRefundDto(row: RelayRefundRow): RelayRefundDto {
  return {
    type: 'relay_refund',
    id: row.id,
    connection_id: row.connection_id,
    vendor_payment_id: row.vendor_payment_id,
    amount: Number(row.amount),
    currency: row.currency,
    reason: row.reason,
    status: row.status,
    vendor_refund_id: row.vendor_refund_id,
    error_code: row.error_code,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * What requests, vendors' notifications and the settlement job all do to a relay refund: its creation
 * and its outcome, each with its audit row (`entity_type` `relay_refund`, by the change's actor) and its
 * event (`relay:refund:created`, then `relay:refund:succeeded` or `relay:refund:failed`, `data` the
 * refund as GET answers it), added to the change that writes it; and the request every vendor call
 * about it starts from. Nothing else writes a relay refund, so no change goes without its event.
 */
@Injectable()
export class RelayJournal {
  constructor(
    private readonly refunds: RelayRefundsRepository,
    private readonly clock: Clock,
  ) {}

  created(change: Change, row: RelayRefundRow): void {
    this.emit(change, 'relay:refund:created', row);
    change.audit({
      entityType: 'relay_refund',
      entityId: row.id,
      operation: 'create',
      message: `Relay refund of ${row.amount} ${row.currency} of vendor payment ${row.vendor_payment_id} at connection ${row.connection_id}: processing`,
    });
  }

  /**
   * Records an outcome once, while the refund is `processing` (an outcome still `processing` only notes
   * the vendor's refund id: no event). Answers the row as the change left it, undefined when it had been
   * settled already (then nothing is written, not even the audit row).
   */
  async settle(
    change: Change,
    refund: Pick<RelayRefundRow, 'tenant_id' | 'id'>,
    outcome: RelayOutcome,
    by: string,
  ): Promise<RelayRefundRow | undefined> {
    const settled = await this.refunds.settle(change, refund, outcome, this.clock.now());
    if (!settled) return undefined;
    if (settled.status !== 'processing')
      this.emit(
        change,
        settled.status === 'succeeded' ? 'relay:refund:succeeded' : 'relay:refund:failed',
        settled,
      );
    const why = settled.error_code ? ` (${settled.error_code})` : '';
    change.audit({
      entityType: 'relay_refund',
      entityId: settled.id,
      operation: 'update',
      message: `${by}: ${settled.status}${why}`,
    });
    return settled;
  }

  /** A note on a relay refund that changes nothing (a vendor reversing what it confirmed). */
  note(change: Change, id: string, message: string): void {
    change.audit({ entityType: 'relay_refund', entityId: id, operation: 'update', message });
  }

  /**
   * The vendor call's request: the vendor's payment id stands for a transaction's, and the relay refund's
   * id makes both the reference and the refund's key, so every idempotency key and merchant reference the
   * adapters derive (`<reference>:refund:<key>`, `<reference>.<key>`) is the relay refund's own.
   */
  request(row: RelayRefundRow, connection: UsableConnection): RefundRequest {
    return {
      credentials: connection.credentials,
      reconciliationId: toReconciliationId(row.id),
      attempt: 1,
      connectionTransactionId: row.vendor_payment_id,
      cardLast4: '',
      amount: Number(row.amount),
      currency: row.currency,
      refundId: row.id,
    };
  }

  /** The settlement job's question to the vendor about a relay refund. */
  pollRequest(row: RelayRefundRow, connection: UsableConnection): PollRequest {
    const { refundId, ...request } = this.request(row, connection);
    return { ...request, refundId, operation: 'refund', requestedAt: row.created_at, now: this.clock.now() };
  }

  private emit(change: Change, type: EventType, row: RelayRefundRow): void {
    change.emit({ tenantId: row.tenant_id, type, entityId: row.id, data: relayRefundDto(row) });
  }
}

/**
 * Whether a merchant reference's two parts name a relay refund: the adapters write a refund's as
 * `<reference>.<key>`, and a relay refund is both (a transaction's refund never has its transaction's id).
 */
export const isRelayReference = (reference: string, key: string | null): boolean => reference === key;
