import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { randomUUID } from 'node:crypto';
import { Clock } from '../jobs/clock';
import type { Change } from '../unit-of-work/change';
import { AuditLogsRepository, type NewAuditLog } from './audit-logs.repository';
import type { AuditActor, AuditEntry, AuditTokenType } from './audit.types';

const PENDING_CLS_KEY = 'audit:pending';
const TOKEN_TYPES_CLS_KEY = 'audit:token-types';

function actorType(actor: AuditActor): NewAuditLog['actorType'] {
  if (actor.applicationId !== null) return 'application';
  if (actor.system) return 'system';
  return actor.anonymous ? 'anonymous' : 'buyer';
}

/**
 * Collects and writes audit log rows. Services `record()` entries during an audited request; the audit
 * interceptor writes them in the request's transaction. `write()` inserts at once in the current
 * transaction (for work outside HTTP requests, such as the CLI creating a tenant).
 */
@Injectable()
export class AuditTrail {
  constructor(
    private readonly cls: ClsService,
    private readonly logs: AuditLogsRepository,
    private readonly clock: Clock,
  ) {}

  /** Starts collecting for the current request; nested transactions share the same list. */
  begin(): AuditEntry[] {
    const pending: AuditEntry[] = [];
    this.cls.set(PENDING_CLS_KEY, pending);
    // Set here, at the request's start: transactions run in nested contexts, which share these objects.
    this.cls.set(TOKEN_TYPES_CLS_KEY, new Map<string, AuditTokenType>());
    return pending;
  }

  /** Adds an entry to the current audited request. Outside one (a job, the CLI) it is a no-op. */
  record(entry: AuditEntry): void {
    const pending = this.cls.isActive() ? this.cls.get<AuditEntry[] | undefined>(PENDING_CLS_KEY) : undefined;
    pending?.push(entry);
  }

  /**
   * The type of a token the current request acts on, for the rows of that token the audit interceptor
   * writes (a delete answers nothing to read it from).
   */
  noteTokenType(id: string, type: AuditTokenType): void {
    if (!this.cls.isActive()) return;
    this.cls.get<Map<string, AuditTokenType> | undefined>(TOKEN_TYPES_CLS_KEY)?.set(id, type);
  }

  /** One multi-row INSERT of the entries, in the current transaction when there is one. */
  async write(actor: AuditActor, entries: AuditEntry[]): Promise<void> {
    if (!entries.length) return;
    const now = this.clock.now();
    const suffix = actor.sessionId ? ` (session ${actor.sessionId})` : '';
    const noted = this.cls.isActive()
      ? this.cls.get<Map<string, AuditTokenType> | undefined>(TOKEN_TYPES_CLS_KEY)
      : undefined;
    const tokenType = (e: AuditEntry): string | null =>
      e.entityType !== 'token'
        ? null
        : (e.tokenType ?? (e.entityId ? noted?.get(e.entityId) : undefined) ?? null);
    await this.logs.insert(
      entries.map((e) => ({
        id: randomUUID(),
        tenantId: actor.tenantId,
        actorId: actor.applicationId,
        actorType: actorType(actor),
        entityType: e.entityType,
        entityId: e.entityId,
        operation: e.operation,
        message: `${e.message}${suffix}`,
        tokenType: tokenType(e),
        createdAt: now,
      })),
    );
  }

  /** The audit rows a change collected (`change.audit`), attributed to its actor, written with it. */
  async writeChange(change: Change): Promise<void> {
    if (!change.entries.length) return;
    const now = this.clock.now();
    const actor = change.actor;
    const suffix = actor.sessionId ? ` (session ${actor.sessionId})` : '';
    await this.logs.insertIn(
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
