import { Injectable } from '@nestjs/common';
import { AuditLogReadsRepository } from './audit-log-reads.repository';
import { SYSTEM_TENANT_ID } from './system-tenant';

/** One row of the system tenant's log, as `vault logs --system` prints it (a log object's fields). */
export interface SystemLogLine {
  id: string;
  tenant_id: string;
  actor_type: string;
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
  created_at: string;
}

const PAGE = 500;

/** `vault logs --system`: the system tenant's log (docs/keys.md), oldest first. */
@Injectable()
export class SystemLog {
  constructor(private readonly reads: AuditLogReadsRepository) {}

  async read(): Promise<SystemLogLine[]> {
    const lines: SystemLogLine[] = [];
    let before: { createdAt: string; id: string } | undefined;
    for (;;) {
      const page = await this.reads.page({ tenantId: SYSTEM_TENANT_ID, before }, PAGE);
      for (const row of page)
        lines.push({
          id: row.id,
          tenant_id: row.tenantId,
          actor_type: row.actorType,
          entity_type: row.entityType,
          entity_id: row.entityId,
          operation: row.operation,
          message: row.message,
          created_at: row.createdAt.toISOString(),
        });
      if (page.length < PAGE) break;
      before = { createdAt: page[page.length - 1].cursorAt, id: page[page.length - 1].id };
    }
    return lines.reverse();
  }
}
