import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
import { SqlParams } from '../../../database/sql';
import { type ColumnOf, columnsOf, insertSql, type RowOf, queryRows } from '../../../database/table';
import { RefundEntity, type RefundStatus } from './entities/refund.entity';
import type { NotifiedVendors } from './transactions.repository';

export type { RefundStatus };

/** What a refund shows: its columns but the vendor's id and the last update. */
const SHOWN = [
  'id',
  'tenant_id',
  'transaction_id',
  'amount',
  'currency',
  'status',
  'created_at',
] as const satisfies ColumnOf<RefundEntity>[];

export type RefundRow = Pick<RowOf<RefundEntity>, (typeof SHOWN)[number]>;

export interface NewRefund {
  id: string;
  tenantId: string;
  transactionId: string;
  amount: number;
  currency: string;
  createdAt: Date;
}

const COLUMNS = columnsOf(RefundEntity, undefined, { only: SHOWN });

/** Examples for the SQL snapshots (`@GenerateSql`). */
const TENANT = '00000000-0000-4000-8000-000000000001';
const TRANSACTION = '00000000-0000-4000-8000-000000000002';
const REFUND = '00000000-0000-4000-8000-000000000006';
const AT = new Date('2026-01-02T03:04:05.000Z');

/**
 * Refunds of captured transactions: every statement on the `refunds` table. Writes, and the reads a
 * change makes under its transaction's lock, run in the change they are given; other reads on the pool.
 */
@Injectable()
export class RefundsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The total of the transaction's refunds still `processing` (read under the transaction's lock). */
  @GenerateSql({ change: true, params: [TENANT, TRANSACTION], answers: [[{ pending: '0' }]] })
  async pendingTotal(change: Change, tenantId: string, transactionId: string): Promise<number> {
    const [{ pending }] = await queryRows<{ pending: string }>(
      change,
      `SELECT coalesce(sum(amount), 0) AS pending FROM refunds
        WHERE tenant_id = $1 AND transaction_id = $2 AND status = 'processing'`,
      [tenantId, transactionId],
    );
    return Number(pending);
  }

  @GenerateSql({
    change: true,
    params: [
      {
        id: REFUND,
        tenantId: TENANT,
        transactionId: TRANSACTION,
        amount: 500,
        currency: 'USD',
        createdAt: AT,
      },
    ],
  })
  async insert(change: Change, refund: NewRefund): Promise<RefundRow> {
    const p = new SqlParams();
    const [id, tenantId, transactionId, amount, currency, now] = [
      refund.id,
      refund.tenantId,
      refund.transactionId,
      refund.amount,
      refund.currency,
      refund.createdAt,
    ].map((value) => p.add(value));
    // Each column with the SQL of its value.
    const insert = insertSql(RefundEntity, {
      id,
      tenant_id: tenantId,
      transaction_id: transactionId,
      amount,
      currency,
      status: `'processing'`,
      created_at: now,
      updated_at: now,
    });
    const rows = await queryRows<RefundRow>(change, `${insert} RETURNING ${COLUMNS}`, p.values);
    return rows[0];
  }

  /**
   * Records a refund's outcome, only while it is `processing` (a request and the job never both settle
   * it). Answers the settled row, or nothing when it was settled already.
   */
  @GenerateSql({
    change: true,
    params: [{ tenant_id: TENANT, id: REFUND }, { status: 'succeeded', vendorId: 're_1' }, AT],
  })
  async settle(
    change: Change,
    refund: Pick<RefundRow, 'tenant_id' | 'id'>,
    outcome: { status: RefundStatus; vendorId: string | null },
    now: Date,
  ): Promise<RefundRow | undefined> {
    const rows = await queryRows<RefundRow>(
      change,
      `UPDATE refunds SET status = $3, connection_refund_id = $4, updated_at = $5
        WHERE tenant_id = $1 AND id = $2 AND status = 'processing' RETURNING ${COLUMNS}`,
      [refund.tenant_id, refund.id, outcome.status, outcome.vendorId, now],
    );
    return rows[0];
  }

  /** A page of a transaction's refunds, oldest first, and how many it has. */
  @GenerateSql({ params: [TENANT, TRANSACTION, { skip: 0, take: 20 }], answers: [[], [{ n: 0 }]] })
  async list(
    tenantId: string,
    transactionId: string,
    page: { skip: number; take: number },
  ): Promise<{ rows: RefundRow[]; total: number }> {
    const rows = await queryRows<RefundRow>(
      this.dataSource,
      `SELECT ${COLUMNS} FROM refunds WHERE tenant_id = $1 AND transaction_id = $2
        ORDER BY created_at, id LIMIT $3 OFFSET $4`,
      [tenantId, transactionId, page.take, page.skip],
    );
    const [{ n }] = await queryRows<{ n: number }>(
      this.dataSource,
      'SELECT count(*)::int AS n FROM refunds WHERE tenant_id = $1 AND transaction_id = $2',
      [tenantId, transactionId],
    );
    return { rows, total: n };
  }

  /**
   * Refunds still `processing` since before `stuckBefore`, across tenants (or one tenant's, `tenantId`),
   * for the settlement job.
   */
  @GenerateSql({
    params: [
      new Date('2026-01-02T03:03:05.000Z'),
      100,
      { formulas: ['adyen-card'], waitingSince: new Date('2026-01-02T02:04:05.000Z') },
      TENANT,
    ],
  })
  async findStuck(
    stuckBefore: Date,
    limit: number,
    notified: NotifiedVendors,
    tenantId: string | null = null,
  ): Promise<RefundRow[]> {
    return queryRows<RefundRow>(
      this.dataSource,
      `SELECT ${columnsOf(RefundEntity, 'r', { only: SHOWN })} FROM refunds r
        JOIN transactions t ON t.tenant_id = r.tenant_id AND t.id = r.transaction_id
        JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id
        WHERE ($5::uuid IS NULL OR r.tenant_id = $5)
          AND r.status = 'processing' AND r.updated_at <= $1
          AND NOT (c.environment <> 'sandbox' AND c.formula_id = ANY($3) AND r.created_at > $4)
        ORDER BY r.updated_at LIMIT $2`,
      [stuckBefore, limit, notified.formulas, notified.waitingSince, tenantId],
    );
  }

  /** One refund of a transaction. */
  @GenerateSql({ params: [TENANT, TRANSACTION, REFUND] })
  async find(tenantId: string, transactionId: string, id: string): Promise<RefundRow | undefined> {
    const rows = await queryRows<RefundRow>(
      this.dataSource,
      `SELECT ${COLUMNS} FROM refunds WHERE tenant_id = $1 AND transaction_id = $2 AND id = $3`,
      [tenantId, transactionId, id],
    );
    return rows[0];
  }
}
