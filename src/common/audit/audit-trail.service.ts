import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock } from '../jobs/clock';
import type { Change } from '../unit-of-work/change';
import { AuditLogsRepository, type NewAuditLog } from './audit-logs.repository';
import type { AuditActor } from './audit.types';

function actorType(actor: AuditActor): NewAuditLog['actorType'] {
  if (actor.applicationId !== null) return 'application';
  if (actor.system) return 'system';
  return actor.anonymous ? 'anonymous' : 'buyer';
}

/**
 * Writes the audit rows a change collected (`change.audit`), attributed to its actor: the unit of work
 * calls it as the change ends, so the rows commit with the change or not at all.
 */
@Injectable()
export class AuditTrail {
  constructor(
    private readonly logs: AuditLogsRepository,
    private readonly clock: Clock,
  ) {}

  async writeChange(change: Change): Promise<void> {
    if (!change.entries.length) return;
    const now = this.clock.now();
    const actor = change.actor;
    const suffix = actor.sessionId ? ` (session ${actor.sessionId})` : '';
    await this.logs.insert(
      change,
      change.entries.map((e) => ({
        id: randomUUID(),
        tenantId: actor.tenantId,
        actorId: actor.applicationId,
        actorType: actorType(actor),
        entityType: e.entityType,
        entityId: e.entityId,
        operation: e.operation,
        message: `${e.message}${suffix}`,
        tokenType: e.entityType === 'token' ? (e.tokenType ?? null) : null,
        createdAt: now,
      })),
    );
  }
}
