import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { EntityType, Operation, SystemEntityType } from './audit.types';
import { LOG_COLUMNS } from './log-object';
import { AuditLogEntity } from './entities/audit-log.entity';
import { cursorTimeSql } from '../pagination/cursor-pagination';
import { GenerateSql } from '../../database/generate-sql';
import { SqlParams } from '../../database/sql';
import { type ColumnOf, columnsOf, type RowOf, queryRows } from '../../database/table';

const EXAMPLE_FILTER: LogFilter = {
  tenantId: '00000000-0000-4000-8000-000000000001',
  entityType: 'card',
  startDate: '2026-01-01T00:00:00.000Z',
  endDate: '2026-01-02T00:00:00.000Z',
  before: { createdAt: '2026-01-01T12:00:00.000000Z', id: '00000000-0000-4000-8000-000000000002' },
};

export interface LogFilter {
  tenantId: string;
  entityType?: string;
  entityId?: string;
  startDate?: string;
  endDate?: string;
  /** Keyset position: rows strictly older than `(created_at, id)`. */
  before?: { createdAt: string; id: string };
}

/** One audit log row, with its keyset timestamp exact to the microsecond (for a cursor). */
export interface LogRecord {
  id: string;
  tenantId: string;
  actorId: string | null;
  actorType: string;
  entityType: EntityType | SystemEntityType;
  entityId: string | null;
  operation: Operation;
  message: string;
  createdAt: Date;
  cursorAt: string;
}

/** What a log shows of an audit row (its token type and place in the tree stay inside). */
const SHOWN = LOG_COLUMNS satisfies readonly ColumnOf<AuditLogEntity>[];

type LogRow = Pick<RowOf<AuditLogEntity>, (typeof SHOWN)[number]> & { cursor_at: string };

/**
 * The page query, newest first. The filters are equalities on an index's leading columns and a range
 * on `created_at`, and the order is that index's order backwards, so a page is an index range scan of
 * `limit` entries whatever the size of the table (see the 1,000,000-row EXPLAIN test).
 */
function logWhere(filter: LogFilter, p: SqlParams): string {
  const where = [`tenant_id = ${p.add(filter.tenantId)}`];
  if (filter.entityType === 'card' || filter.entityType === 'bank' || filter.entityType === 'network_token')
    where.push(`entity_type = 'token'`, `token_type = ${p.add(filter.entityType)}`);
  else if (filter.entityType !== undefined) where.push(`entity_type = ${p.add(filter.entityType)}`);
  if (filter.entityId !== undefined) where.push(`entity_id = ${p.add(filter.entityId)}`);
  if (filter.startDate !== undefined) where.push(`created_at >= ${p.add(filter.startDate)}::timestamptz`);
  if (filter.endDate !== undefined) where.push(`created_at < ${p.add(filter.endDate)}::timestamptz`);
  if (filter.before)
    where.push(
      `(created_at, id) < (${p.add(filter.before.createdAt)}::timestamptz, ${p.add(filter.before.id)}::uuid)`,
    );
  return where.join(' AND ');
}

export function logPageQuery(
  filter: LogFilter,
  limit: number,
  offset = 0,
): { sql: string; params: unknown[] } {
  const p = new SqlParams();
  const sql = `SELECT ${columnsOf(AuditLogEntity, undefined, { only: SHOWN })},
         ${cursorTimeSql('created_at')} AS cursor_at
    FROM audit_logs
   WHERE ${logWhere(filter, p)}
   ORDER BY created_at DESC, id DESC
   LIMIT ${p.add(limit)}${offset ? ` OFFSET ${p.add(offset)}` : ''}`;
  return { sql, params: p.values };
}

function logCountQuery(filter: LogFilter): { sql: string; params: unknown[] } {
  const p = new SqlParams();
  return { sql: `SELECT count(*)::int AS n FROM audit_logs WHERE ${logWhere(filter, p)}`, params: p.values };
}

const record = (row: LogRow): LogRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  actorId: row.actor_id,
  actorType: row.actor_type,
  entityType: row.entity_type,
  entityId: row.entity_id,
  operation: row.operation,
  message: row.message,
  createdAt: row.created_at,
  cursorAt: row.cursor_at,
});

/** Reading `audit_logs` (for `GET /logs`) through the pool. */
@Injectable()
export class AuditLogReadsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A page of a tenant's logs, newest first: `limit` rows after skipping `offset`. */
  @GenerateSql(
    { name: 'page', params: [EXAMPLE_FILTER, 21] },
    { name: 'numberedPage', params: [EXAMPLE_FILTER, 20, 40] },
  )
  async page(filter: LogFilter, limit: number, offset = 0): Promise<LogRecord[]> {
    const { sql, params } = logPageQuery(filter, limit, offset);
    const rows = await queryRows<LogRow>(this.dataSource, sql, params);
    return rows.map(record);
  }

  @GenerateSql({ params: [EXAMPLE_FILTER], answers: [[{ n: 0 }]] })
  async count(filter: LogFilter): Promise<number> {
    const { sql, params } = logCountQuery(filter);
    const [{ n }]: { n: number }[] = await this.dataSource.query(sql, params);
    return n;
  }
}
