import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
import { SqlParams } from '../../../database/sql';
import {
  insertSql,
  optional,
  prefixedRowsOf,
  queryRows,
  type RowOf,
  type RowType,
} from '../../../database/table';
import { ConnectionEntity } from '../connections/entities/connection.entity';
import { beginAttemptSql } from './attempts.repository';
import type { TransactionStatus } from './transaction.dto';
import { type PaymentMethodSummary, TransactionEntity } from './entities/transaction.entity';
import { assignments } from './transaction-assignments';
import type { TransactionState, Transition } from './transaction-state';
import {
  AT,
  CAPTURE_BEGUN,
  CONNECTION,
  EXAMPLE,
  NOTIFIED,
  TENANT,
  TRANSACTION,
} from './transactions.examples';

/** The connection summary every transaction object shows: null without a connection (declined by a rule). */
const CONNECTION_SUMMARY = optional(
  prefixedRowsOf(ConnectionEntity, {
    alias: 'c',
    only: ['formula_id', 'display_name', 'method'],
    prefix: 'c_',
  }),
);

/** A transaction as stored, with its connection summary. */
export type TransactionRow = RowOf<TransactionEntity> & RowType<typeof CONNECTION_SUMMARY>;

export type { PaymentMethodSummary };
export type { IssuedApproval, NewTransaction, NotifiedVendors } from './transaction-types';
import type { IssuedApproval, NewTransaction, NotifiedVendors } from './transaction-types';

export interface TransactionFilters {
  status?: TransactionStatus;
  connectionId?: string;
  externalIdentifier?: string;
  buyerId?: string;
}

/** Transactions of `from` (the table, or rows a write returned) with their connection summary. */
const selectWithConnection = (from: string): string =>
  `SELECT t.*, ${CONNECTION_SUMMARY.sql}
  FROM ${from} t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id`;
const SELECT_TRANSACTION = selectWithConnection('transactions');
/** A write on `transactions` that answers the rows it wrote as `find` does, in the same statement. */
const returningRow = (write: string): string =>
  `WITH written AS (${write} RETURNING *) ${selectWithConnection('written')}`;

/** The state machine's view of a stored transaction. */
export function stateOf(row: TransactionRow): TransactionState {
  return {
    status: row.status,
    intent: row.intent,
    amount: Number(row.amount),
    authorizedAmount: Number(row.authorized_amount),
    cvvResponseCode: row.cvv_response_code,
    pendingOperation: row.pending_operation,
    pendingAmount: row.pending_amount === null ? null : Number(row.pending_amount),
    previousStatus: row.previous_status,
  };
}

/**
 * Transactions: every statement on the `transactions` table. Writes, and the reads a change makes under
 * its lock, run in the change they are given; other reads on the pool.
 */
@Injectable()
export class TransactionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Records a transaction as `processing` its authorization; answers it as stored. */
  @GenerateSql(
    { change: true, params: [EXAMPLE] },
    {
      name: 'insert with its first attempt',
      change: true,
      params: [{ ...EXAMPLE, firstAttemptId: '00000000-0000-4000-8000-000000000007' }],
    },
  )
  async insert(change: Change, t: NewTransaction): Promise<TransactionRow> {
    const p = new SqlParams();
    // Each column with the SQL of its value; parameters numbered as the statement always had them.
    const [id, tenantId, connectionId, tokenId, now] = [
      t.id,
      t.tenantId,
      t.connectionId,
      t.tokenId,
      t.createdAt,
    ].map((value) => p.add(value));
    const insert = insertSql(TransactionEntity, {
      id,
      tenant_id: tenantId,
      connection_id: connectionId,
      token_id: tokenId,
      status: t.declinedByRule ? `'authorization_declined'` : `'processing'`,
      pending_operation: t.declinedByRule ? 'NULL' : `'authorize'`,
      pending_since: t.declinedByRule ? 'NULL' : now,
      ...(t.declinedByRule ? { error_code: `'declined_by_rule'` } : {}),
      intent: p.add(t.intent),
      amount: p.add(t.amount),
      currency: p.add(t.currency),
      country: p.add(t.country),
      external_identifier: p.add(t.externalIdentifier),
      metadata: p.add(t.metadata ? JSON.stringify(t.metadata) : null),
      payment_source: p.add(t.paymentSource),
      merchant_initiated: p.add(t.merchantInitiated),
      is_subsequent_payment: p.add(t.isSubsequentPayment),
      previous_scheme_transaction_id: p.add(t.previousSchemeTransactionId),
      three_d_session_id: p.add(t.threeDSessionId),
      payment_method: p.add(JSON.stringify(t.paymentMethod)),
      buyer_id: p.add(t.buyer?.id ?? null),
      buyer_external_identifier: p.add(t.buyer?.externalIdentifier ?? null),
      buyer_display_name: p.add(t.buyer?.displayName ?? null),
      store_payment_method: p.add(t.storePaymentMethod),
      created_by: p.add(t.createdBy),
      created_at: now,
      updated_at: now,
    });
    // The first attempt in the same statement: `processing` at the transaction's connection.
    const sql = t.firstAttemptId
      ? `WITH written AS (${insert} RETURNING *),
          first_attempt AS (${beginAttemptSql(
            {
              tenantId: 'tenant_id',
              id: `${p.add(t.firstAttemptId)}::uuid`,
              transactionId: 'id',
              number: '1',
              connectionId: 'connection_id',
              at: 'created_at',
            },
            'written',
          )})
        ${selectWithConnection('written')}`
      : returningRow(insert);
    const rows = await queryRows<TransactionRow>(change, sql, p.values);
    return rows[0];
  }

  /** One transaction of the tenant. */
  @GenerateSql({ params: [TENANT, TRANSACTION] })
  async find(tenantId: string, id: string): Promise<TransactionRow | undefined> {
    const rows = await queryRows<TransactionRow>(
      this.dataSource,
      `${SELECT_TRANSACTION} WHERE t.tenant_id = $1 AND t.id = $2`,
      [tenantId, id],
    );
    return rows[0];
  }

  /** One transaction of the tenant, locked until the change ends. */
  @GenerateSql({ change: true, params: [TENANT, TRANSACTION] })
  async lock(change: Change, tenantId: string, id: string): Promise<TransactionRow | undefined> {
    const rows = await queryRows<TransactionRow>(
      change,
      `${SELECT_TRANSACTION} WHERE t.tenant_id = $1 AND t.id = $2 FOR UPDATE OF t`,
      [tenantId, id],
    );
    return rows[0];
  }

  /**
   * The transaction an approval link belongs to. The link is all the buyer has (no tenant is known
   * yet), so this is the one lookup across tenants, by the digest of a 256-bit random token.
   */
  @GenerateSql({ params: [Buffer.alloc(32, 1)] })
  async findByApprovalDigest(digest: Buffer): Promise<TransactionRow | undefined> {
    const rows = await queryRows<TransactionRow>(
      this.dataSource,
      `${SELECT_TRANSACTION} WHERE t.approval_token_hash = $1`,
      [digest],
    );
    return rows[0];
  }

  /**
   * The transaction a vendor sends a buyer back for (its 3-D Secure return URL names the reconciliation
   * id, no tenant): across tenants, by id, and only while it awaits the buyer.
   */
  @GenerateSql({ params: [TRANSACTION] })
  async findAwaitingBuyer(id: string): Promise<TransactionRow | undefined> {
    const rows = await queryRows<TransactionRow>(
      this.dataSource,
      `${SELECT_TRANSACTION} WHERE t.id = $1 AND t.status = 'buyer_approval_pending'`,
      [id],
    );
    return rows[0];
  }

  /**
   * The transaction a vendor's notification names (by reconciliation id, no tenant): across tenants, by
   * id. The caller verifies the notification with that transaction's own connection before acting.
   */
  @GenerateSql({ params: [TRANSACTION] })
  async findForNotification(id: string): Promise<TransactionRow | undefined> {
    const rows = await queryRows<TransactionRow>(this.dataSource, `${SELECT_TRANSACTION} WHERE t.id = $1`, [
      id,
    ]);
    return rows[0];
  }

  /** A page of the tenant's transactions, newest first, and how many match in all. */
  @GenerateSql(
    { name: 'list', params: [TENANT, {}, { skip: 0, take: 20 }], answers: [[], [{ n: 0 }]] },
    {
      name: 'list filtered',
      params: [
        TENANT,
        { status: 'capture_succeeded', connectionId: CONNECTION, externalIdentifier: 'order-1' },
        { skip: 20, take: 20 },
      ],
      answers: [[], [{ n: 0 }]],
    },
  )
  async list(
    tenantId: string,
    filters: TransactionFilters,
    page: { skip: number; take: number },
  ): Promise<{ rows: TransactionRow[]; total: number }> {
    const p = new SqlParams();
    const where = [`t.tenant_id = ${p.add(tenantId)}`];
    if (filters.status) where.push(`t.status = ${p.add(filters.status)}`);
    if (filters.connectionId) where.push(`t.connection_id = ${p.add(filters.connectionId)}`);
    if (filters.externalIdentifier)
      where.push(`t.external_identifier = ${p.add(filters.externalIdentifier)}`);
    if (filters.buyerId) where.push(`t.buyer_id = ${p.add(filters.buyerId)}`);
    const countParams = [...p.values];
    const rows = await queryRows<TransactionRow>(
      this.dataSource,
      `${SELECT_TRANSACTION} WHERE ${where.join(' AND ')} ORDER BY t.created_at DESC, t.id DESC LIMIT ${p.add(page.take)} OFFSET ${p.add(page.skip)}`,
      p.values,
    );
    const [{ n }] = await queryRows<{ n: number }>(
      this.dataSource,
      `SELECT count(*)::int AS n FROM transactions t WHERE ${where.join(' AND ')}`,
      countParams,
    );
    return { rows, total: n };
  }

  /**
   * Applies a state machine transition, only if the transaction is still in `transition.from` (so that a
   * request and the settlement job never both settle it). Answers the transaction as it now stands when
   * it applied, undefined when not.
   */
  @GenerateSql(
    { name: 'apply', change: true, params: [TENANT, TRANSACTION, CAPTURE_BEGUN, AT] },
    {
      name: 'apply issuing an approval',
      change: true,
      params: [
        TENANT,
        TRANSACTION,
        {
          from: 'processing',
          patch: { status: 'buyer_approval_pending', connectionTransactionId: 'pi_1', approval: 'issue' },
        },
        AT,
        {
          tokenDigest: Buffer.alloc(32, 1),
          sealedToken: Buffer.alloc(16, 2),
          expiresAt: AT,
          sealedVendorAction: null,
        },
      ],
    },
  )
  async apply(
    change: Change,
    tenantId: string,
    id: string,
    transition: Transition,
    now: Date,
    approval?: IssuedApproval,
  ): Promise<TransactionRow | undefined> {
    const p = new SqlParams();
    const sets = assignments(transition.patch, approval, p);
    sets.push(`updated_at = ${p.add(now)}`);
    const rows = await queryRows<TransactionRow>(
      change,
      returningRow(`UPDATE transactions SET ${sets.join(', ')}
        WHERE tenant_id = ${p.add(tenantId)} AND id = ${p.add(id)} AND status = ${p.add(transition.from)}`),
      p.values,
    );
    return rows[0];
  }

  /**
   * Moves a transaction still `processing` its authorization at attempt `from` to its next attempt, at
   * `connectionId`. Answers the transaction, or nothing when it is no longer there (settled meanwhile).
   */
  @GenerateSql({ change: true, params: [TENANT, TRANSACTION, 1, '00000000-0000-4000-8000-000000000003', AT] })
  async nextAttempt(
    change: Change,
    tenantId: string,
    id: string,
    from: number,
    connectionId: string,
    now: Date,
  ): Promise<TransactionRow | undefined> {
    const rows = await queryRows<TransactionRow>(
      change,
      returningRow(`UPDATE transactions SET connection_id = $4, attempt = attempt + 1, pending_since = $5, updated_at = $5
        WHERE tenant_id = $1 AND id = $2 AND attempt = $3 AND status = 'processing' AND pending_operation = 'authorize'`),
      [tenantId, id, from, connectionId, now],
    );
    return rows[0];
  }

  /** Adds a settled refund to the transaction's refunded amount; answers the transaction as it now stands. */
  @GenerateSql({ change: true, params: [TENANT, TRANSACTION, '500', AT] })
  async addRefunded(
    change: Change,
    tenantId: string,
    id: string,
    amount: string,
    now: Date,
  ): Promise<TransactionRow> {
    const rows = await queryRows<TransactionRow>(
      change,
      returningRow(
        `UPDATE transactions SET refunded_amount = refunded_amount + $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2`,
      ),
      [tenantId, id, amount, now],
    );
    return rows[0];
  }

  /**
   * What the settlement job has to settle, across tenants (or one tenant's, `tenantId`): asynchronous
   * captures and voids, operations interrupted before `stuckBefore`, and buyer approvals expired by `now`.
   */
  @GenerateSql({ params: [new Date('2026-01-02T03:03:05.000Z'), AT, 100, NOTIFIED, TENANT] })
  async findUnsettled(
    stuckBefore: Date,
    now: Date,
    limit: number,
    notified: NotifiedVendors,
    tenantId: string | null = null,
  ): Promise<TransactionRow[]> {
    return queryRows<TransactionRow>(
      this.dataSource,
      `${SELECT_TRANSACTION}
        WHERE ($6::uuid IS NULL OR t.tenant_id = $6)
          AND (((t.status IN ('capture_pending', 'authorization_void_pending'))
                OR (t.status = 'processing' AND t.pending_since <= $1))
               AND NOT (c.environment <> 'sandbox' AND c.formula_id = ANY($4)
                        AND COALESCE(t.pending_since, t.updated_at) > $5)
               OR (t.status = 'buyer_approval_pending' AND t.approval_expires_at <= $2))
        ORDER BY t.updated_at LIMIT $3`,
      [stuckBefore, now, limit, notified.formulas, notified.waitingSince, tenantId],
    );
  }
}
