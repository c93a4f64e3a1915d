import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { NotifiedVendors } from './transactions.repository';

export type RefundStatus = 'processing' | 'succeeded' | 'failed';

export interface RefundRow {
  id: string;
  tenant_id: string;
  transaction_id: string;
  amount: string;
  currency: string;
  status: RefundStatus;
  created_at: Date;
}

export interface NewRefund {
  id: string;
  tenantId: string;
  transactionId: string;
  amount: number;
  currency: string;
  createdAt: Date;
}

const COLUMNS = 'id, tenant_id, transaction_id, amount, currency, status, created_at';

/** Refunds of captured transactions: every statement on the `refunds` table. */
@Injectable()
export class RefundsRepository {
  constructor(private readonly db: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The total of the transaction's refunds still `processing`. */
  async pendingTotal(tenantId: string, transactionId: string): Promise<number> {
    const [{ pending }]: { pending: string }[] = await this.db.tx.query(
      `SELECT coalesce(sum(amount), 0) AS pending FROM refunds
        WHERE tenant_id = $1 AND transaction_id = $2 AND status = 'processing'`,
      [tenantId, transactionId],
    );
    return Number(pending);
  }

  async insert(refund: NewRefund): Promise<RefundRow> {
    const rows: RefundRow[] = await this.db.tx.query(
      `INSERT INTO refunds (id, tenant_id, transaction_id, amount, currency, status, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'processing', $6, $6) RETURNING ${COLUMNS}`,
      [refund.id, refund.tenantId, refund.transactionId, refund.amount, refund.currency, refund.createdAt],
    );
    return rows[0];
  }

  /**
   * Records a refund's outcome, only while it is `processing` (a request and the job never both settle
   * it). Answers the settled row, or nothing when it was settled already.
   */
  async settle(
    refund: Pick<RefundRow, 'tenant_id' | 'id'>,
    outcome: { status: RefundStatus; vendorId: string | null },
    now: Date,
  ): Promise<RefundRow | undefined> {
    const [rows]: [RefundRow[], number] = await this.db.tx.query(
      `UPDATE refunds SET status = $3, connection_refund_id = $4, updated_at = $5
        WHERE tenant_id = $1 AND id = $2 AND status = 'processing' RETURNING ${COLUMNS}`,
      [refund.tenant_id, refund.id, outcome.status, outcome.vendorId, now],
    );
    return rows[0];
  }

  /** A page of a transaction's refunds, oldest first, and how many it has. */
  async list(
    tenantId: string,
    transactionId: string,
    page: { skip: number; take: number },
  ): Promise<{ rows: RefundRow[]; total: number }> {
    const rows: RefundRow[] = await this.db.tx.query(
      `SELECT ${COLUMNS} FROM refunds WHERE tenant_id = $1 AND transaction_id = $2
        ORDER BY created_at, id LIMIT $3 OFFSET $4`,
      [tenantId, transactionId, page.take, page.skip],
    );
    const [{ n }]: { n: number }[] = await this.db.tx.query(
      'SELECT count(*)::int AS n FROM refunds WHERE tenant_id = $1 AND transaction_id = $2',
      [tenantId, transactionId],
    );
    return { rows, total: n };
  }

  /** Refunds still `processing` since before `stuckBefore`, across tenants (for the settlement job). */
  async findStuck(stuckBefore: Date, limit: number, notified: NotifiedVendors): Promise<RefundRow[]> {
    return this.db.tx.query(
      `SELECT ${COLUMNS.split(', ')
        .map((c) => `r.${c}`)
        .join(', ')} FROM refunds r
        JOIN transactions t ON t.tenant_id = r.tenant_id AND t.id = r.transaction_id
        JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id
        WHERE r.status = 'processing' AND r.updated_at <= $1
          AND NOT (c.environment <> 'sandbox' AND c.formula_id = ANY($3) AND r.created_at > $4)
        ORDER BY r.updated_at LIMIT $2`,
      [stuckBefore, limit, notified.formulas, notified.waitingSince],
    );
  }

  /** One refund of a transaction. */
  async find(tenantId: string, transactionId: string, id: string): Promise<RefundRow | undefined> {
    const rows: RefundRow[] = await this.db.tx.query(
      `SELECT ${COLUMNS} FROM refunds WHERE tenant_id = $1 AND transaction_id = $2 AND id = $3`,
      [tenantId, transactionId, id],
    );
    return rows[0];
  }
}
