import { Injectable } from '@nestjs/common';
import { GenerateSql } from '../../database/generate-sql';
import { columnsOf, recordsetOf, type RowOf } from '../../database/table';
import type { Change } from '../unit-of-work/change';
import type { PieceBuilder } from '../unit-of-work/write-batch';
import { AuditLogEntity } from './entities/audit-log.entity';

/** The columns the INSERT leaves out: the old chain's (never written since), and the place the database gives. */
const SEALING = ['seq', 'prev_hash', 'hash', 'written', 'pos'] as const;

/** An audit log row as written: everything but its place in the chain and the tree. */
export type NewAuditLog = Omit<AuditLogEntity, 'seq' | 'prevHash' | 'hash' | 'written' | 'pos'>;

const COLUMNS = columnsOf(AuditLogEntity, undefined, { except: SEALING });
const RECORD = recordsetOf(AuditLogEntity, { except: SEALING });

/**
 * Appends to `audit_logs` (the tree and the logs module read it), with the change that records the rows.
 */
@Injectable()
export class AuditLogsRepository {
  /** The rows, written with the change (its transaction, or its one statement). */
  @GenerateSql({
    change: true,
    params: [
      [
        {
          id: '00000000-0000-4000-8000-000000000003',
          tenantId: '00000000-0000-4000-8000-000000000001',
          actorId: '00000000-0000-4000-8000-000000000002',
          actorType: 'application',
          entityType: 'token',
          entityId: '00000000-0000-4000-8000-000000000004',
          operation: 'create',
          message: 'Token created',
          tokenType: 'card',
          createdAt: new Date('2026-01-01T00:00:00.000Z'),
        },
      ],
    ],
  })
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
        rows.map((row): Omit<RowOf<AuditLogEntity>, (typeof SEALING)[number]> => ({
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
