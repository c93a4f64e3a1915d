import { parseInstant } from '../../common/dates';
import { LogsErrorCode, LogsException } from './logs.errors';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { LOG_ENTITY_TYPES } from '../../common/audit/audit.types';
import type { Principal } from '../../common/auth/principal';
import { RetentionJob } from '../../common/jobs/retention.job';
import {
  CURSOR_TIME,
  CURSOR_UUID,
  decodeCursor,
  encodeCursor,
} from '../../common/pagination/cursor-pagination';
import { AppConfig } from '../../config/app-config';
import { LOCK_KEYS } from '../../database/data-source';
import { EntityTypeDto, ListLogsQueryDto, LogDto, LogPageDto } from './dto/log.dto';
import { LogFilter, LogRecord, AuditLogReadsRepository } from '../../common/audit/audit-log-reads.repository';

function logDto(row: LogRecord): LogDto {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    actor_id: row.actorId,
    actor_type: row.actorType,
    entity_type: row.entityType,
    entity_id: row.entityId,
    operation: row.operation,
    message: row.message,
    created_at: row.createdAt.toISOString(),
  };
}

/** Reading the audit log (append-only: nothing here changes a row) and its retention. */
@Injectable()
export class LogsService implements OnModuleInit {
  constructor(
    private readonly logs: AuditLogReadsRepository,
    private readonly config: AppConfig,
    private readonly retention: RetentionJob,
  ) {}

  /** Logs older than LOG_RETENTION_DAYS are deleted hourly. */
  onModuleInit(): void {
    this.retention.register({
      name: 'log-retention',
      lockKey: LOCK_KEYS.jobLogRetention,
      periodMs: 3_600_000,
      purge: (change, now) =>
        this.logs.deleteCreatedBefore(
          change,
          new Date(now.getTime() - this.config.LOG_RETENTION_DAYS * 86_400_000),
        ),
    });
  }

  entityTypes(): EntityTypeDto[] {
    return Object.entries(LOG_ENTITY_TYPES).map(([value, display_name]) => ({ display_name, value }));
  }

  async list(who: Principal, query: ListLogsQueryDto): Promise<LogPageDto> {
    if (query.page !== undefined && query.start !== undefined)
      throw new LogsException(LogsErrorCode.BadRequest, 'Use either start (a cursor) or page, not both.');
    const filter: LogFilter = {
      tenantId: who.tenantId,
      entityType: query.entity_type,
      entityId: query.entity_id,
      startDate: query.start_date === undefined ? undefined : parseInstant(query.start_date)!.toISOString(),
      endDate: query.end_date === undefined ? undefined : parseInstant(query.end_date)!.toISOString(),
    };
    if (query.start !== undefined) {
      const [createdAt, id] = decodeCursor(query.start, [CURSOR_TIME, CURSOR_UUID]);
      filter.before = { createdAt, id };
    }
    if (query.page !== undefined) return this.numberedPage(filter, query.page, query.size);
    const rows = await this.logs.page(filter, query.size + 1);
    const page = rows.slice(0, query.size);
    const last = page[page.length - 1];
    return {
      pagination: {
        page_size: query.size,
        ...(rows.length > query.size && last ? { after: encodeCursor([last.cursorAt, last.id]) } : {}),
      },
      data: page.map(logDto),
    };
  }

  private async numberedPage(filter: LogFilter, pageNumber: number, size: number): Promise<LogPageDto> {
    const rows = await this.logs.page(filter, size, (pageNumber - 1) * size);
    const n = await this.logs.count(filter);
    return {
      pagination: {
        page_size: size,
        total_items: n,
        page_number: pageNumber,
        total_pages: Math.ceil(n / size),
      },
      data: rows.map(logDto),
    };
  }
}
