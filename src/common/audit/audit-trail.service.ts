import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { randomUUID } from 'node:crypto';
import { multiRowInsert } from '../../database/sql';
import { Clock } from '../jobs/clock';
import type { AuditActor, AuditEntry } from './audit.types';

const PENDING_CLS_KEY = 'audit:pending';

/**
 * Collects and writes audit log rows. Services `record()` entries during an audited request; the audit
 * interceptor writes them in the request's transaction. `write()` inserts at once in the current
 * transaction (for work outside HTTP requests, such as the CLI creating a tenant).
 */
@Injectable()
export class AuditTrail {
  constructor(
    private readonly cls: ClsService,
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
  ) {}

  /** Starts collecting for the current request; nested transactions share the same list. */
  begin(): AuditEntry[] {
    const pending: AuditEntry[] = [];
    this.cls.set(PENDING_CLS_KEY, pending);
    return pending;
  }

  /** Adds an entry to the current audited request. Outside one (a job, the CLI) it is a no-op. */
  record(entry: AuditEntry): void {
    const pending = this.cls.isActive() ? this.cls.get<AuditEntry[] | undefined>(PENDING_CLS_KEY) : undefined;
    pending?.push(entry);
  }

  /** One multi-row INSERT of the entries, in the current transaction when there is one. */
  async write(actor: AuditActor, entries: AuditEntry[]): Promise<void> {
    if (!entries.length) return;
    const now = this.clock.now();
    const suffix = actor.sessionId ? ` (session ${actor.sessionId})` : '';
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
        'created_at',
      ],
      entries.map((e) => [
        randomUUID(),
        actor.tenantId,
        actor.applicationId,
        actor.applicationId === null ? 'buyer' : 'application',
        e.entityType,
        e.entityId,
        e.operation,
        `${e.message}${suffix}`,
        now,
      ]),
    );
    await this.db.tx.query(sql, params);
  }
}
