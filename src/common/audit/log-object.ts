import type { EntityType, Operation } from './audit.types';
import { canonicalJson } from './tree/canonical-json';
import { leafHash } from './tree/merkle';

/** An audit log row as `GET /logs` shows it, and as its tree's leaf holds it. */
export interface LogObject {
  id: string;
  tenant_id: string;
  actor_id: string | null;
  actor_type: string;
  entity_type: EntityType;
  entity_id: string | null;
  operation: Operation;
  message: string;
  created_at: string;
}

/** The stored columns a log object is made of. */
export const LOG_COLUMNS = [
  'id',
  'tenant_id',
  'actor_id',
  'actor_type',
  'entity_type',
  'entity_id',
  'operation',
  'message',
  'created_at',
] as const;

export type LogColumns = Omit<LogObject, 'created_at'> & { created_at: Date };

export const logObject = (row: LogColumns): LogObject => ({
  id: row.id,
  tenant_id: row.tenant_id,
  actor_id: row.actor_id,
  actor_type: row.actor_type,
  entity_type: row.entity_type,
  entity_id: row.entity_id,
  operation: row.operation,
  message: row.message,
  created_at: row.created_at.toISOString(),
});

/** The leaf: the UTF-8 bytes of the log object's RFC 8785 canonical JSON. */
export const logLeaf = (log: LogObject): Buffer => Buffer.from(canonicalJson(log), 'utf8');

/** The leaf's hash in the tree (RFC 9162: SHA-256 of 0x00 and the leaf). */
export const logLeafHash = (log: LogObject): Buffer => leafHash(logLeaf(log));
