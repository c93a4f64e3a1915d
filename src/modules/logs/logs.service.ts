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
import { AuditProofs } from '../../common/audit/audit-proofs.service';
import { AuditSigningKeys } from '../../common/audit/audit-signing-keys.service';
import { AuditTreeRepository, type StoredCheckpoint } from '../../common/audit/audit-tree.repository';
import { logObject } from '../../common/audit/log-object';
import { ValidationException } from '../../common/errors/domain.exception';
import {
  CheckpointDto,
  ConsistencyProofDto,
  ConsistencyQueryDto,
  LogProofDto,
  ProofQueryDto,
  SigningKeyDto,
} from './dto/log-proof.dto';

function logDto(row: LogRecord): LogDto {
  return logObject({
    id: row.id,
    tenant_id: row.tenantId,
    actor_id: row.actorId,
    actor_type: row.actorType,
    // `key` rows are the system tenant's only, whose log no request reads (docs/keys.md).
    entity_type: row.entityType as LogDto['entity_type'],
    entity_id: row.entityId,
    operation: row.operation,
    message: row.message,
    created_at: row.createdAt,
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checkpointDto(c: StoredCheckpoint, origin: string): CheckpointDto {
  return {
    origin,
    tree_size: c.treeSize,
    root_hash: c.rootHash.toString('base64'),
    created_at: c.createdAt.toISOString(),
    note: c.note,
  };
}

/**
 * Reading the audit log (append-only: nothing here changes a row), its checkpoints and proofs, and its
 * retention. Reading writes no audit row.
 */
@Injectable()
export class LogsService implements OnModuleInit {
  constructor(
    private readonly logs: AuditLogReadsRepository,
    private readonly config: AppConfig,
    private readonly retention: RetentionJob,
    private readonly trees: AuditTreeRepository,
    private readonly proofs: AuditProofs,
    private readonly keys: AuditSigningKeys,
  ) {}

  /**
   * Logs older than LOG_RETENTION_DAYS are deleted hourly, once in a checkpoint, oldest leaves first: the
   * tree keeps their hashes, so that the rest still prove.
   */
  onModuleInit(): void {
    this.retention.register({
      name: 'log-retention',
      lockKey: LOCK_KEYS.jobLogRetention,
      periodMs: 3_600_000,
      purge: (change, now) =>
        this.trees.deleteRetained(
          change,
          new Date(now.getTime() - this.config.LOG_RETENTION_DAYS * 86_400_000),
        ),
    });
  }

  async checkpoint(who: Principal): Promise<CheckpointDto> {
    const latest = await this.trees.checkpoint(who.tenantId);
    if (!latest)
      throw new LogsException(
        LogsErrorCode.NoCheckpoint,
        `This tenant's audit log has no checkpoint yet; one is made within ${this.config.AUDIT_CHECKPOINT_SECONDS} seconds of its first row.`,
      );
    return checkpointDto(latest, this.keys.origin(who.tenantId));
  }

  signingKeys(): Promise<SigningKeyDto[]> {
    return this.keys.published();
  }

  async proof(who: Principal, id: string, query: ProofQueryDto): Promise<LogProofDto> {
    const found = UUID.test(id) ? await this.trees.rowWithLeaf(who.tenantId, id.toLowerCase()) : undefined;
    if (!found) throw new LogsException(LogsErrorCode.NotFound, 'No log with this id.');
    const latest = found.checkpointSize;
    const index = found.leafIndex;
    const notYet = () =>
      new LogsException(
        LogsErrorCode.NotYetCheckpointed,
        'This log is not in a checkpoint yet; retry shortly.',
        undefined,
        { 'Retry-After': String(this.config.AUDIT_CHECKPOINT_SECONDS) },
      );
    let size: number;
    if (query.tree_size !== undefined) {
      if (!(await this.trees.checkpoint(who.tenantId, query.tree_size)))
        throw ValidationException.field('tree_size', 'must be the size of a checkpoint of this log');
      if (index === null || index >= query.tree_size) {
        if (index === null || latest === null || index >= latest) throw notYet();
        throw ValidationException.field(
          'tree_size',
          `must include this log (leaf ${index}): at least ${index + 1}`,
        );
      }
      size = query.tree_size;
    } else {
      if (index === null || latest === null || index >= latest) throw notYet();
      size = latest;
    }
    const path = await this.proofs.inclusion(who.tenantId, index, size);
    return {
      log: logObject(found.row),
      leaf_index: index,
      tree_size: size,
      inclusion_path: path.map((hash) => hash.toString('base64')),
    };
  }

  async consistency(who: Principal, query: ConsistencyQueryDto): Promise<ConsistencyProofDto> {
    if (query.first >= query.second) throw ValidationException.field('first', 'must be below second');
    for (const name of ['first', 'second'] as const)
      if (!(await this.trees.checkpoint(who.tenantId, query[name])))
        throw ValidationException.field(name, 'must be the size of a checkpoint of this log');
    const path = await this.proofs.consistency(who.tenantId, query.first, query.second);
    return {
      first: query.first,
      second: query.second,
      consistency_path: path.map((hash) => hash.toString('base64')),
    };
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
