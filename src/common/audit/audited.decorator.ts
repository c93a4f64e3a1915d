import { SetMetadata } from '@nestjs/common';
import type { Request } from 'express';
import type { EntityType, Operation } from './audit.types';

export const AUDIT_METADATA = 'vault:audit';

export interface AuditSpec {
  entityType: EntityType;
  operation: Operation;
  /** The log message; a function sees the request and the handler's result (never put secrets in it). */
  message?: string | ((req: Request, result: unknown) => string);
  /**
   * `recorded`: the service records its own entries (one per token created, for example) and the
   * interceptor adds none. Otherwise one entry, for the route's `:id` or else the result's `id`.
   */
  entries?: 'recorded';
}

/**
 * Marks a handler as an audited operation on an entity. Creates, updates and deletes run in one
 * database transaction with their log rows; reads and searches are logged after they succeed.
 */
export const Audited = (
  entityType: EntityType,
  operation: Operation,
  options: Omit<AuditSpec, 'entityType' | 'operation'> = {},
): MethodDecorator => SetMetadata(AUDIT_METADATA, { entityType, operation, ...options } satisfies AuditSpec);
