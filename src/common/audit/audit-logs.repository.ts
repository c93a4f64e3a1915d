import { Injectable } from '@nestjs/common';
import { deferredWrite } from '../context/transactional';
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

const COLUMNS = [
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
].join(', ');

/**
 * Appends to `audit_logs` (the chain and the logs module read it): in the caller's transaction, or in the
 * one statement of a `@OneStatement()` method.
 */
@Injectable()
export class AuditLogsRepository {
  /** One multi-row INSERT of the rows. */
  async insert(rows: NewAuditLog[]): Promise<void> {
    if (!rows.length) return;
    await deferredWrite((p, name) => {
      const tuples = rows.map(
        (row) =>
          `(${[
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
          ]
            .map((value) => p.add(value))
            .join(', ')})`,
      );
      return {
        ctes: [`${name('audit')} AS (INSERT INTO audit_logs (${COLUMNS}) VALUES ${tuples.join(', ')})`],
      };
    });
  }
}
