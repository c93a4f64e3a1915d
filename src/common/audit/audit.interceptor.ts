import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { defer, lastValueFrom, Observable } from 'rxjs';
import type { RequestWithPrincipal } from '../auth/principal';
import { UnitOfWork } from '../unit-of-work/unit-of-work';
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
 * Writes the audit row of every read and search marked `@Audited`, once it has succeeded, as a change
 * of its own. A write records its rows in its own change (`change.audit`), where the service makes it, so
 * that they commit with it; a write route marked `@Audited` is a mistake this refuses loudly.
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly work: UnitOfWork,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<AuditSpec | undefined>(AUDIT_METADATA, context.getHandler());
    if (!spec || context.getType() !== 'http') return next.handle();
    if (spec.operation !== 'read' && spec.operation !== 'search')
      throw new Error(
        `@Audited('${spec.entityType}', '${spec.operation}'): a write records its rows in its change`,
      );
    const req = context.switchToHttp().getRequest<RequestWithPrincipal>();
    return defer(async (): Promise<unknown> => {
      const result: unknown = await lastValueFrom(next.handle(), { defaultValue: undefined });
      const who = req.principal;
      if (who)
        await this.work.statement({ actor: who }, async (change) => {
          change.audit(this.defaultEntry(spec, req, result));
        });
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
      spec.entityType === 'token' &&
      (type === 'token' || type === 'card' || type === 'bank' || type === 'network_token')
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
