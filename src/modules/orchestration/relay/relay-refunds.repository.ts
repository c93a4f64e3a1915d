import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
import { SqlParams } from '../../../database/sql';
import { insertSql, queryRows, rowsOf, select, type RowType } from '../../../database/table';
import { RelayRefundEntity, type RelayRefundStatus } from './entities/relay-refund.entity';

export type { RelayRefundStatus };

const ROW = rowsOf(RelayRefundEntity);
export type RelayRefundRow = RowType<typeof ROW>;

export interface NewRelayRefund {
  id: string;
  tenantId: string;
  connectionId: string;
  vendorPaymentId: string;
  amount: number;
  currency: string;
  reason: string | null;
  createdAt: Date;
}

/** The formulas whose vendors confirm by notification, and since when their refunds are waited for. */
export interface NotifiedVendors {
  formulas: string[];
  waitingSince: Date;
}

/** Examples for the SQL snapshots (`@GenerateSql`). */
const TENANT = '00000000-0000-4000-8000-000000000001';
const CONNECTION = '00000000-0000-4000-8000-000000000003';
const REFUND = '00000000-0000-4000-8000-000000000007';
const AT = new Date('2026-01-02T03:04:05.000Z');

/**
 * Relay refunds: every statement on the `relay_refunds` table. Writes run in the change they are
 * given; reads on the pool.
 */
@Injectable()
export class RelayRefundsRepository {
  constructor(private readonly dataSource: DataSource) {}

  @GenerateSql({
    change: true,
    params: [
      {
        id: REFUND,
        tenantId: TENANT,
        connectionId: CONNECTION,
        vendorPaymentId: 'pi_3Old',
        amount: 500,
        currency: 'USD',
        reason: 'requested_by_customer',
        createdAt: AT,
      },
    ],
  })
  async insert(change: Change, refund: NewRelayRefund): Promise<RelayRefundRow> {
    const p = new SqlParams();
    const now = p.add(refund.createdAt);
    // Each column with the SQL of its value.
    const insert = insertSql(RelayRefundEntity, {
      tenant_id: p.add(refund.tenantId),
      id: p.add(refund.id),
      connection_id: p.add(refund.connectionId),
      vendor_payment_id: p.add(refund.vendorPaymentId),
      amount: p.add(refund.amount),
      currency: p.add(refund.currency),
      reason: p.add(refund.reason),
      status: `'processing'`,
      created_at: now,
      updated_at: now,
    });
    const rows = await select(change, ROW, (columns) => `${insert} RETURNING ${columns}`, p.values);
    return rows[0];
  }

  /**
   * Records a relay refund's outcome, only while it is `processing` (a request, a notification and the
   * job never both settle it). Answers the settled row, or nothing when it was settled already.
   */
  @GenerateSql({
    change: true,
    params: [
      { tenant_id: TENANT, id: REFUND },
      { status: 'succeeded', vendorRefundId: 're_1', errorCode: null },
      AT,
    ],
  })
  async settle(
    change: Change,
    refund: Pick<RelayRefundRow, 'tenant_id' | 'id'>,
    outcome: { status: RelayRefundStatus; vendorRefundId: string | null; errorCode: string | null },
    now: Date,
  ): Promise<RelayRefundRow | undefined> {
    const rows = await select(
      change,
      ROW,
      (columns) =>
        `UPDATE relay_refunds SET status = $3, vendor_refund_id = coalesce($4, vendor_refund_id),
           error_code = $5, updated_at = $6
          WHERE tenant_id = $1 AND id = $2 AND status = 'processing' RETURNING ${columns}`,
      [refund.tenant_id, refund.id, outcome.status, outcome.vendorRefundId, outcome.errorCode, now],
    );
    return rows[0];
  }

  /** One relay refund of the tenant's. */
  @GenerateSql({ params: [TENANT, REFUND] })
  async find(tenantId: string, id: string): Promise<RelayRefundRow | undefined> {
    const rows = await select(
      this.dataSource,
      ROW,
      (columns) => `SELECT ${columns} FROM relay_refunds WHERE tenant_id = $1 AND id = $2`,
      [tenantId, id],
    );
    return rows[0];
  }

  /**
   * A relay refund by its id alone, whatever its tenant: a vendor's notification names it by its
   * reference only. The caller verifies the notification with the refund's own connection before acting.
   */
  @GenerateSql({ params: [REFUND] })
  async findForNotification(id: string): Promise<RelayRefundRow | undefined> {
    const rows = await select(
      this.dataSource,
      ROW,
      (columns) => `SELECT ${columns} FROM relay_refunds WHERE id = $1`,
      [id],
    );
    return rows[0];
  }

  /** A page of the tenant's relay refunds, newest first, and how many it has. */
  @GenerateSql({ params: [TENANT, { skip: 0, take: 20 }], answers: [[], [{ n: 0 }]] })
  async list(
    tenantId: string,
    page: { skip: number; take: number },
  ): Promise<{ rows: RelayRefundRow[]; total: number }> {
    const rows = await select(
      this.dataSource,
      ROW,
      (columns) =>
        `SELECT ${columns} FROM relay_refunds WHERE tenant_id = $1
          ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
      [tenantId, page.take, page.skip],
    );
    const [{ n }] = await queryRows<{ n: number }>(
      this.dataSource,
      'SELECT count(*)::int AS n FROM relay_refunds WHERE tenant_id = $1',
      [tenantId],
    );
    return { rows, total: n };
  }

  /**
   * Relay refunds still `processing` since before `stuckBefore`, across tenants or one tenant's (for the
   * settlement job); at a vendor that confirms by notification, only once it has been waited for.
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
  ): Promise<RelayRefundRow[]> {
    return select(
      this.dataSource,
      rowsOf(RelayRefundEntity, { alias: 'r' }),
      (columns) =>
        `SELECT ${columns} FROM relay_refunds r
          JOIN connections c ON c.tenant_id = r.tenant_id AND c.id = r.connection_id
          WHERE ($5::uuid IS NULL OR r.tenant_id = $5)
            AND r.status = 'processing' AND r.updated_at <= $1
            AND NOT (c.environment <> 'sandbox' AND c.formula_id = ANY($3) AND r.created_at > $4)
          ORDER BY r.updated_at LIMIT $2`,
      [stuckBefore, limit, notified.formulas, notified.waitingSince, tenantId],
    );
  }
}
