import { Injectable } from '@nestjs/common';
import type { Change } from '../unit-of-work/change';
import type { PieceBuilder } from '../unit-of-work/write-batch';
import type { EntityType, Operation } from './audit.types';

export interface NewAuditLog {
  id: string;
  tenantId: string;
  actorId: string | null;
  actorType: 'application' | 'buyer' | 'anonymous' | 'system';
  entityType: EntityType;
  entityId: string | null;
  operation: Operation;
  message: string;
  tokenType: string | null;
  createdAt: Date;
}

const COLUMNS =
  'id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, token_type, created_at';
const RECORD = `id uuid, tenant_id uuid, actor_id uuid, actor_type varchar, entity_type varchar, entity_id text,
  operation varchar, message text, token_type varchar, created_at timestamptz`;

/**
 * Appends to `audit_logs` (the chain and the logs module read it), with the change that records the rows.
 */
@Injectable()
export class AuditLogsRepository {
  /** The rows, written with the change (its transaction, or its one statement). */
  async insert(change: Change, rows: NewAuditLog[]): Promise<void> {
    if (!rows.length) return;
    await change.write(insertPiece(rows));
  }
}

/**
 * One INSERT of the rows, which travel as one JSON parameter: the statement's text is the same for one
 * row or a hundred (PostgreSQL can keep it prepared).
 */
const insertPiece =
  (rows: NewAuditLog[]): PieceBuilder =>
  ({ p, name }) => {
    const given = p.add(
      JSON.stringify(
        rows.map((row) => ({
          id: row.id,
          tenant_id: row.tenantId,
          actor_id: row.actorId,
          actor_type: row.actorType,
          entity_type: row.entityType,
          entity_id: row.entityId,
          operation: row.operation,
          message: row.message,
          token_type: row.tokenType,
          created_at: row.createdAt,
        })),
      ),
    );
    return {
      ctes: [
        `${name('audit')} AS (INSERT INTO audit_logs (${COLUMNS})
           SELECT ${COLUMNS} FROM jsonb_to_recordset(${given}::jsonb) AS r(${RECORD}))`,
      ],
    };
  };
