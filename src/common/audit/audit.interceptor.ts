import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { defer, lastValueFrom, Observable } from 'rxjs';
import type { RequestWithPrincipal } from '../auth/principal';
import { onRequestCommit } from '../context/transactional';
import { AuditTrail } from './audit-trail.service';
import { ENTITY_TYPES, type AuditEntry } from './audit.types';
import { AUDIT_METADATA, type AuditSpec } from './audited.decorator';

const PAST: Record<AuditEntry['operation'], string> = {
  create: 'created',
  read: 'read',
  update: 'updated',
  delete: 'deleted',
  search: 'searched',
  use: 'used',
  reveal: 'revealed',
  refuse: 'refused',
};

function resultId(result: unknown): string | null {
  if (result && typeof result === 'object' && 'id' in result && typeof result.id === 'string')
    return result.id;
  return null;
}

/**
 * Writes the audit log of every handler marked `@Audited`. A change's log rows commit with it: they are
 * written in the transaction the service method declares (`@Transactional()`), just before it commits,
 * so a failed change leaves no log and a committed one always has its log. A handler that commits
 * several transactions itself (orchestration) writes its own rows in them; anything left is written
 * after it. A read is logged once it has succeeded.
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly trail: AuditTrail,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<AuditSpec | undefined>(AUDIT_METADATA, context.getHandler());
    if (!spec || context.getType() !== 'http') return next.handle();
    const req = context.switchToHttp().getRequest<RequestWithPrincipal>();
    return defer(async (): Promise<unknown> => {
      const pending = this.trail.begin();
      const write = async (result: unknown): Promise<void> => {
        const who = req.principal;
        if (!who) return;
        const entries: AuditEntry[] =
          spec.entries === 'recorded' ? pending : [...pending, this.defaultEntry(spec, req, result)];
        await this.trail.write(
          { tenantId: who.tenantId, applicationId: who.applicationId, sessionId: who.sessionId },
          entries,
        );
      };
      const changes = spec.operation !== 'read' && spec.operation !== 'search';
      // Deferrable: it only inserts (through AuditLogsRepository), so it joins a @OneStatement() write.
      const edge = changes ? onRequestCommit(write, { deferrable: true }) : undefined;
      const result: unknown = await lastValueFrom(next.handle(), { defaultValue: undefined });
      if (!edge?.ran) await write(result);
      return result;
    });
  }

  private defaultEntry(spec: AuditSpec, req: RequestWithPrincipal, result: unknown): AuditEntry {
    const param = req.params?.id;
    const entityId = typeof param === 'string' ? param : resultId(result);
    const display = ENTITY_TYPES[spec.entityType];
    const message =
      typeof spec.message === 'function'
        ? spec.message(req, result)
        : (spec.message ??
          (entityId
            ? `${display} ${PAST[spec.operation]}`
            : `${display}s ${spec.operation === 'read' ? 'listed' : PAST[spec.operation]}`));
    const type = (result as { type?: unknown } | null | undefined)?.type;
    const tokenType =
      spec.entityType === 'token' && (type === 'token' || type === 'card' || type === 'bank')
        ? type
        : undefined;
    return {
      entityType: spec.entityType,
      entityId,
      operation: spec.operation,
      message,
      ...(tokenType ? { tokenType } : {}),
    };
  }
}
