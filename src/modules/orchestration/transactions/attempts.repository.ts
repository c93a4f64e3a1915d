import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
import { joined, prefixedRowsOf, rowsOf, type RowOf, type RowType, select } from '../../../database/table';
import { ConnectionEntity } from '../connections/entities/connection.entity';
import { AttemptEntity, type AttemptStatus } from './entities/attempt.entity';
import type { TransactionEntity } from './entities/transaction.entity';
import type { TransactionStatus } from './transaction.dto';

export type { AttemptStatus };

/** The connection summary the attempts list shows beside each attempt. */
const CONNECTION_SUMMARY = prefixedRowsOf(ConnectionEntity, {
  alias: 'c',
  only: ['formula_id', 'display_name', 'method'],
  prefix: 'c_',
});
const ATTEMPT_WITH_CONNECTION = joined(rowsOf(AttemptEntity, { alias: 'a' }), CONNECTION_SUMMARY);

/** An attempt with its connection summary. */
export type AttemptRow = RowType<typeof ATTEMPT_WITH_CONNECTION>;

/** What an attempt's vendor answered. */
export interface AttemptOutcome {
  status: AttemptStatus;
  errorCode: string | null;
  authResponseCode: string | null;
  connectionTransactionId: string | null;
}

/** The attempt status a transaction's authorization outcome gives its last attempt (others: none). */
const ATTEMPT_STATUS_OF: Partial<Record<TransactionStatus, AttemptStatus>> = {
  authorization_succeeded: 'succeeded',
  capture_succeeded: 'succeeded',
  authorization_declined: 'declined',
  authorization_failed: 'failed',
  buyer_approval_pending: 'buyer_approval_pending',
};

/** What the last attempt is followed from: its transaction as stored. */
export type FollowedTransaction = Pick<
  RowOf<TransactionEntity>,
  | 'tenant_id'
  | 'id'
  | 'attempt'
  | 'status'
  | 'error_code'
  | 'auth_response_code'
  | 'connection_transaction_id'
  | 'connection_id'
>;

/** The outcome the last attempt takes from its transaction, or none (not an authorization outcome). */
export function followingOutcome(row: FollowedTransaction): AttemptOutcome | undefined {
  const status = ATTEMPT_STATUS_OF[row.status];
  if (!status || !row.connection_id) return undefined;
  return {
    status,
    errorCode: row.error_code,
    authResponseCode: row.auth_response_code,
    connectionTransactionId: row.connection_transaction_id,
  };
}

/** The SQL of each value of a new attempt (a parameter such as `$1::uuid`, or a column of `from`). */
export interface NewAttemptSql {
  tenantId: string;
  id: string;
  transactionId: string;
  number: string;
  connectionId: string;
  /** Its `created_at` and `updated_at`. */
  at: string;
}

/**
 * The INSERT of an attempt begun `processing`, before its vendor call: the one statement both the
 * transaction's first attempt (with the transaction's INSERT, its values read `from` the row written)
 * and every later attempt (`AttemptsRepository.begin`, its values parameters) use.
 */
export function beginAttemptSql(values: NewAttemptSql, from?: string): string {
  const { tenantId, id, transactionId, number, connectionId, at } = values;
  return `INSERT INTO transaction_attempts
      (tenant_id, id, transaction_id, number, connection_id, status, created_at, updated_at)
    SELECT ${tenantId}, ${id}, ${transactionId}, ${number}, ${connectionId}, 'processing', ${at}, ${at}${from ? ` FROM ${from}` : ''}`;
}

/** Examples for the SQL snapshots (`@GenerateSql`). */
const TENANT = '00000000-0000-4000-8000-000000000001';
const TRANSACTION = '00000000-0000-4000-8000-000000000002';
const CONNECTION = '00000000-0000-4000-8000-000000000003';
const ATTEMPT = '00000000-0000-4000-8000-000000000007';
const AT = new Date('2026-01-02T03:04:05.000Z');

/**
 * Attempts: every statement on `transaction_attempts`. Their writes are pieces of the change's one write
 * statement (no round trip of their own); reads on the pool.
 */
@Injectable()
export class AttemptsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Records an attempt as `processing`, before its vendor call. */
  @GenerateSql({ change: true, params: [TENANT, TRANSACTION, 1, CONNECTION, ATTEMPT, AT] })
  async begin(
    change: Change,
    tenantId: string,
    transactionId: string,
    number: number,
    connectionId: string,
    id: string,
    now: Date,
  ): Promise<void> {
    await change.write(({ p, name }) => {
      const insert = beginAttemptSql({
        tenantId: `${p.add(tenantId)}::uuid`,
        id: `${p.add(id)}::uuid`,
        transactionId: `${p.add(transactionId)}::uuid`,
        number: `${p.add(number)}::int`,
        connectionId: `${p.add(connectionId)}::uuid`,
        at: `${p.add(now)}::timestamptz`,
      });
      return { ctes: [`${name('attempt')} AS (${insert})`] };
    });
  }

  /** Records what the vendor answered an attempt that is still `processing` or awaiting the buyer. */
  @GenerateSql({
    change: true,
    params: [
      TENANT,
      TRANSACTION,
      1,
      { status: 'declined', errorCode: 'declined', authResponseCode: '05', connectionTransactionId: 'pi_1' },
      AT,
    ],
  })
  async settle(
    change: Change,
    tenantId: string,
    transactionId: string,
    number: number,
    outcome: AttemptOutcome,
    now: Date,
  ): Promise<void> {
    await change.write(({ p, name }) => ({
      ctes: [
        `${name('attempt')} AS (UPDATE transaction_attempts
            SET status = ${p.add(outcome.status)}, error_code = ${p.add(outcome.errorCode)},
                auth_response_code = ${p.add(outcome.authResponseCode)},
                connection_transaction_id = ${p.add(outcome.connectionTransactionId)},
                updated_at = ${p.add(now)}::timestamptz
          WHERE tenant_id = ${p.add(tenantId)}::uuid AND transaction_id = ${p.add(transactionId)}::uuid
            AND number = ${p.add(number)}::int AND status IN ('processing', 'buyer_approval_pending'))`,
      ],
    }));
  }

  /**
   * The last attempt follows its transaction's authorization outcome (an answer, a completed challenge,
   * a settlement): nothing when the status entered is not one (a capture, a void).
   */
  @GenerateSql({
    change: true,
    params: [
      {
        tenant_id: TENANT,
        id: TRANSACTION,
        attempt: 1,
        status: 'authorization_declined',
        error_code: 'declined',
        auth_response_code: '05',
        connection_transaction_id: 'pi_1',
        connection_id: CONNECTION,
      },
      AT,
    ],
  })
  async follow(change: Change, row: FollowedTransaction, now: Date): Promise<void> {
    const outcome = followingOutcome(row);
    if (outcome) await this.settle(change, row.tenant_id, row.id, row.attempt, outcome, now);
  }

  /** A transaction's attempts in order, with their connections. */
  @GenerateSql({ params: [TENANT, TRANSACTION] })
  list(tenantId: string, transactionId: string): Promise<AttemptRow[]> {
    return select(
      this.dataSource,
      ATTEMPT_WITH_CONNECTION,
      (columns) =>
        `SELECT ${columns}
           FROM transaction_attempts a JOIN connections c ON c.tenant_id = a.tenant_id AND c.id = a.connection_id
          WHERE a.tenant_id = $1 AND a.transaction_id = $2 ORDER BY a.number`,
      [tenantId, transactionId],
    );
  }
}
