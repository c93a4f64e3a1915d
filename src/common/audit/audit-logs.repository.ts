import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { multiRowInsert } from '../../database/sql';
import type { EntityType, Operation } from './audit.types';

export interface NewAuditLog {
  id: string;
  tenantId: string;
  actorId: string | null;
  actorType: 'application' | 'buyer' | 'anonymous';
  entityType: EntityType;
  entityId: string | null;
  operation: Operation;
  message: string;
  tokenType: string | null;
  createdAt: Date;
}

/** Appends to `audit_logs` (the chain and the logs module read it); joins the caller's transaction. */
@Injectable()
export class AuditLogsRepository {
  constructor(private readonly db: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** One multi-row INSERT of the rows. */
  async insert(rows: NewAuditLog[]): Promise<void> {
    if (!rows.length) return;
    const { sql, params } = multiRowInsert(
      'audit_logs',
      [
        'id',
        'tenant_id',
        'actor_id',
        'actor_type',
        'entity_type',
        'entity_id',
        'operation',
        'message',
        'token_type',
        'created_at',
      ],
      rows.map((row) => [
        row.id,
        row.tenantId,
        row.actorId,
        row.actorType,
        row.entityType,
        row.entityId,
        row.operation,
        row.message,
        row.tokenType,
        row.createdAt,
      ]),
    );
    await this.db.tx.query(sql, params);
  }
}
