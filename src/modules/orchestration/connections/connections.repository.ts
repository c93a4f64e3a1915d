import { Injectable } from '@nestjs/common';
import { DataSource, IsNull, Repository } from 'typeorm';
import type { Change } from '../../../common/unit-of-work/change';
import { GenerateSql } from '../../../database/generate-sql';
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

/**
 * Connections to payment vendors: plain CRUD through the entity, every read and write by tenant. Writes,
 * and the reads of a change (a lock), run in the change they are given; other reads on the pool.
 */
@Injectable()
export class ConnectionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The entity's repository on the pool (reads outside any change). */
  private get connections(): Repository<ConnectionEntity> {
    return this.dataSource.getRepository(ConnectionEntity);
  }

  /** The entity's repository in a change. */
  private in(change: Change): Repository<ConnectionEntity> {
    return change.manager.getRepository(ConnectionEntity);
  }

  /** A new connection, `pending` until its credentials are verified. */
  async insert(
    change: Change,
    tenantId: string,
    id: string,
    values: ConnectionValues,
    createdBy: string | null,
    now: Date,
  ): Promise<ConnectionEntity> {
    const connections = this.in(change);
    const row = connections.create({
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
    });
    await connections.insert(row);
    return row;
  }

  /** Replaces a connection's values; it is `pending` again and its version moves on. */
  async update(
    change: Change,
    tenantId: string,
    id: string,
    values: ConnectionValues,
    now: Date,
  ): Promise<ConnectionEntity> {
    const connections = this.in(change);
    await connections.update(
      { tenantId, id },
      { ...values, status: 'pending', statusReason: null, version: () => 'version + 1', updatedAt: now },
    );
    return connections.findOneByOrFail({ tenantId, id });
  }

  /** The tenant's connections that are not deleted, oldest first. */
  list(tenantId: string): Promise<ConnectionEntity[]> {
    return this.connections.find({
      where: { tenantId, deletedAt: IsNull() },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
  }

  /** One connection of the tenant; deleted ones only with `includeDeleted` (transactions keep using theirs). */
  async find(
    tenantId: string,
    id: string,
    options: { includeDeleted?: boolean } = {},
  ): Promise<ConnectionEntity | undefined> {
    const row = await this.connections.findOne({
      where: { tenantId, id, ...(options.includeDeleted ? {} : { deletedAt: IsNull() }) },
    });
    return row ?? undefined;
  }

  /** One connection of the tenant that is not deleted, locked until the change ends. */
  async lock(change: Change, tenantId: string, id: string): Promise<ConnectionEntity | undefined> {
    const row = await this.in(change).findOne({
      where: { tenantId, id, deletedAt: IsNull() },
      lock: { mode: 'pessimistic_write' },
    });
    return row ?? undefined;
  }

  /**
   * Whether any transaction, deleted connection or not, refers to the connection (read in the change that
   * deletes it, to choose between a soft and a hard delete).
   */
  @GenerateSql({
    change: true,
    params: ['4cd3f9b0-5d44-4c50-9a44-3f4b8c0f1a10', '5b0c7a3e-8f65-4c1e-b2a9-0d6c1f2e3a41'],
  })
  async hasTransactions(change: Change, tenantId: string, id: string): Promise<boolean> {
    const rows = await change.query(
      'SELECT 1 FROM transactions WHERE tenant_id = $1 AND connection_id = $2 LIMIT 1',
      [tenantId, id],
    );
    return rows.length > 0;
  }

  /** Marks a connection deleted and inactive, keeping the row for the transactions that refer to it. */
  async softDelete(change: Change, tenantId: string, id: string, now: Date): Promise<void> {
    await this.in(change).update({ tenantId, id }, { deletedAt: now, active: false });
  }

  async delete(change: Change, tenantId: string, id: string): Promise<void> {
    await this.in(change).delete({ tenantId, id });
  }

  /** Connections waiting for verification, across tenants (for the verification sweep). */
  findPending(limit: number): Promise<Pick<ConnectionEntity, 'tenantId' | 'id'>[]> {
    return this.connections.find({
      select: { tenantId: true, id: true },
      where: { status: 'pending', deletedAt: IsNull() },
      order: { updatedAt: 'ASC' },
      take: limit,
    });
  }

  /** A connection still waiting for verification. */
  async findPendingOne(tenantId: string, id: string): Promise<ConnectionEntity | undefined> {
    return (
      (await this.connections.findOneBy({ tenantId, id, status: 'pending', deletedAt: IsNull() })) ??
      undefined
    );
  }

  /** Records a verification, only if the connection is still the version that was verified; true when it did. */
  async recordVerification(
    change: Change,
    row: Pick<ConnectionEntity, 'tenantId' | 'id' | 'version'>,
    outcome: { status: 'available' | 'failed'; reason: string | null },
  ): Promise<boolean> {
    const result = await this.in(change).update(
      { tenantId: row.tenantId, id: row.id, version: row.version, status: 'pending' },
      { status: outcome.status, statusReason: outcome.reason },
    );
    return result.affected === 1;
  }
}
