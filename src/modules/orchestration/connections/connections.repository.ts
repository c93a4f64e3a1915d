import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
import { SqlParams } from '../../../database/sql';
import { assignmentsOf, entitiesOf, insertEntity, queryRows, select } from '../../../database/table';
import { ConnectionEntity, ConnectionField } from './entities/connection.entity';

export type { ConnectionField };

/** What a create or an update writes: the request checked against its formula, secrets sealed. */
export type ConnectionValues = Pick<
  ConnectionEntity,
  | 'formulaId'
  | 'method'
  | 'displayName'
  | 'fields'
  | 'secrets'
  | 'acceptedCountries'
  | 'acceptedCurrencies'
  | 'active'
  | 'environment'
  | 'threeDSecureEnabled'
>;

/** A connection as the services use it: every column, under its property. */
const CONNECTION = entitiesOf(ConnectionEntity);

const EXAMPLE_TENANT = '4cd3f9b0-5d44-4c50-9a44-3f4b8c0f1a10';
const EXAMPLE_CONNECTION = '5b0c7a3e-8f65-4c1e-b2a9-0d6c1f2e3a41';
const EXAMPLE_AT = new Date('2026-01-01T00:00:00.000Z');
const EXAMPLE_VALUES: ConnectionValues = {
  formulaId: 'sandbox',
  method: 'card',
  displayName: 'Sandbox',
  fields: [{ key: 'merchant', value: 'm1' }],
  secrets: Buffer.from('sealed'),
  acceptedCountries: ['US'],
  acceptedCurrencies: ['USD'],
  active: true,
  environment: 'sandbox',
  threeDSecureEnabled: false,
};

/**
 * Connections to payment vendors, every read and write by tenant. Writes, and the reads of a change (a
 * lock), run in the change they are given; other reads on the pool.
 */
@Injectable()
export class ConnectionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A new connection, `pending` until its credentials are verified. */
  @GenerateSql({
    change: true,
    params: [EXAMPLE_TENANT, EXAMPLE_CONNECTION, EXAMPLE_VALUES, EXAMPLE_CONNECTION, EXAMPLE_AT],
  })
  async insert(
    change: Change,
    tenantId: string,
    id: string,
    values: ConnectionValues,
    createdBy: string | null,
    now: Date,
  ): Promise<ConnectionEntity> {
    const row: ConnectionEntity = {
      ...values,
      tenantId,
      id,
      status: 'pending',
      statusReason: null,
      version: 1,
      createdBy,
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
    };
    const { sql, params } = insertEntity(ConnectionEntity, row);
    await change.query(sql, params);
    return row;
  }

  /** Replaces a connection's values; it is `pending` again and its version moves on. */
  @GenerateSql({
    change: true,
    params: [EXAMPLE_TENANT, EXAMPLE_CONNECTION, EXAMPLE_VALUES, EXAMPLE_AT],
    answers: [[{ tenantId: EXAMPLE_TENANT, id: EXAMPLE_CONNECTION }]],
  })
  async update(
    change: Change,
    tenantId: string,
    id: string,
    values: ConnectionValues,
    now: Date,
  ): Promise<ConnectionEntity> {
    const p = new SqlParams();
    const where = `tenant_id = ${p.add(tenantId)} AND id = ${p.add(id)}`;
    const set = assignmentsOf(ConnectionEntity, p, {
      ...values,
      status: 'pending',
      statusReason: null,
      updatedAt: now,
    });
    const [row] = await select(
      change,
      CONNECTION,
      (columns) => `UPDATE connections SET ${set}, version = version + 1 WHERE ${where} RETURNING ${columns}`,
      p.values,
    );
    if (!row) throw new Error(`connection ${id} of tenant ${tenantId} not found`);
    return row;
  }

  /** The tenant's connections that are not deleted, oldest first. */
  @GenerateSql({ params: [EXAMPLE_TENANT] })
  list(tenantId: string): Promise<ConnectionEntity[]> {
    return select(
      this.dataSource,
      CONNECTION,
      (columns) => `SELECT ${columns} FROM connections WHERE tenant_id = $1 AND deleted_at IS NULL
        ORDER BY created_at ASC, id ASC`,
      [tenantId],
    );
  }

  /** One connection of the tenant; deleted ones only with `includeDeleted` (transactions keep using theirs). */
  @GenerateSql(
    { name: 'live', params: [EXAMPLE_TENANT, EXAMPLE_CONNECTION] },
    { name: 'including deleted', params: [EXAMPLE_TENANT, EXAMPLE_CONNECTION, { includeDeleted: true }] },
  )
  async find(
    tenantId: string,
    id: string,
    options: { includeDeleted?: boolean } = {},
  ): Promise<ConnectionEntity | undefined> {
    const live = options.includeDeleted ? '' : ' AND deleted_at IS NULL';
    const [row] = await select(
      this.dataSource,
      CONNECTION,
      (columns) => `SELECT ${columns} FROM connections WHERE tenant_id = $1 AND id = $2${live}`,
      [tenantId, id],
    );
    return row;
  }

  /** One connection of the tenant that is not deleted, locked until the change ends. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_CONNECTION] })
  async lock(change: Change, tenantId: string, id: string): Promise<ConnectionEntity | undefined> {
    const [row] = await select(
      change,
      CONNECTION,
      (columns) => `SELECT ${columns} FROM connections
        WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE`,
      [tenantId, id],
    );
    return row;
  }

  /**
   * Whether any transaction, deleted connection or not, refers to the connection (read in the change that
   * deletes it, to choose between a soft and a hard delete).
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_CONNECTION] })
  async hasTransactions(change: Change, tenantId: string, id: string): Promise<boolean> {
    const found = await queryRows<{ found: 1 }>(
      change,
      'SELECT 1 AS found FROM transactions WHERE tenant_id = $1 AND connection_id = $2 LIMIT 1',
      [tenantId, id],
    );
    return found.length > 0;
  }

  /** Marks a connection deleted and inactive, keeping the row for the transactions that refer to it. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_CONNECTION, EXAMPLE_AT] })
  async softDelete(change: Change, tenantId: string, id: string, now: Date): Promise<void> {
    await change.query(
      'UPDATE connections SET deleted_at = $3, active = false WHERE tenant_id = $1 AND id = $2',
      [tenantId, id, now],
    );
  }

  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_CONNECTION] })
  async delete(change: Change, tenantId: string, id: string): Promise<void> {
    await change.query('DELETE FROM connections WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  }

  /** Connections waiting for verification, across tenants (for the verification sweep). */
  @GenerateSql({ params: [50] })
  findPending(limit: number): Promise<Pick<ConnectionEntity, 'tenantId' | 'id'>[]> {
    return select(
      this.dataSource,
      entitiesOf(ConnectionEntity, { only: ['tenant_id', 'id'] }),
      (columns) => `SELECT ${columns} FROM connections WHERE status = 'pending' AND deleted_at IS NULL
        ORDER BY updated_at ASC LIMIT $1`,
      [limit],
    );
  }

  /** A connection still waiting for verification. */
  @GenerateSql({ params: [EXAMPLE_TENANT, EXAMPLE_CONNECTION] })
  async findPendingOne(tenantId: string, id: string): Promise<ConnectionEntity | undefined> {
    const [row] = await select(
      this.dataSource,
      CONNECTION,
      (columns) => `SELECT ${columns} FROM connections
        WHERE tenant_id = $1 AND id = $2 AND status = 'pending' AND deleted_at IS NULL LIMIT 1`,
      [tenantId, id],
    );
    return row;
  }

  /** Records a verification, only if the connection is still the version that was verified; true when it did. */
  @GenerateSql({
    change: true,
    params: [
      { tenantId: EXAMPLE_TENANT, id: EXAMPLE_CONNECTION, version: 2 },
      { status: 'failed', reason: 'declined' },
    ],
  })
  async recordVerification(
    change: Change,
    row: Pick<ConnectionEntity, 'tenantId' | 'id' | 'version'>,
    outcome: { status: 'available' | 'failed'; reason: string | null },
  ): Promise<boolean> {
    const recorded = await queryRows<Pick<ConnectionEntity, 'id'>>(
      change,
      `UPDATE connections SET status = $4, status_reason = $5
        WHERE tenant_id = $1 AND id = $2 AND version = $3 AND status = 'pending' RETURNING id`,
      [row.tenantId, row.id, row.version, outcome.status, outcome.reason],
    );
    return recorded.length === 1;
  }
}
