import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EntityType, Operation, SystemEntityType } from '../audit.types';

/** Who acted on an audit log row's entity. */
export type ActorType = 'application' | 'buyer' | 'anonymous' | 'system';

/**
 * One audit log row: appended, never updated (a trigger refuses it). Its place in the tenant's audit tree
 * is `(written, pos)`, both set by the database as it is inserted. Rows written before the tree also have
 * their place in the old hash chain (`seq`, `prev_hash`, `hash`).
 */
@Entity({ name: 'audit_logs' })
export class AuditLogEntity {
  @PrimaryColumn('uuid')
  id: string;

  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'actor_id', type: 'uuid', nullable: true })
  actorId: string | null;

  @Column({ name: 'actor_type', type: 'varchar', length: 20 })
  actorType: ActorType;

  @Column({ name: 'entity_type', type: 'varchar', length: 40 })
  entityType: EntityType | SystemEntityType;

  @Column({ name: 'entity_id', type: 'text', nullable: true })
  entityId: string | null;

  @Column({ type: 'varchar', length: 20 })
  operation: Operation;

  @Column({ type: 'text' })
  message: string;

  /** The token's type on rows of tokens written since migration 19; null otherwise. */
  @Column({ name: 'token_type', type: 'varchar', length: 16, nullable: true })
  tokenType: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** The inserting transaction's id (`pg_current_xact_id()`, a bigint as text; 0 for rows older than the tree). */
  @Column({ type: 'bigint', default: () => 'pg_current_xact_id()::text::bigint' })
  written: string;

  /** From the sequence `audit_logs_pos_seq`, in insertion order (a bigint, as text). */
  @Column({ type: 'bigint', default: () => "nextval('audit_logs_pos_seq')" })
  pos: string;

  /** The row's position in its tenant's old chain (a bigint, as text); null on rows written since the tree. */
  @Column({ type: 'bigint', nullable: true })
  seq: string | null;

  @Column({ name: 'prev_hash', type: 'bytea', nullable: true })
  prevHash: Buffer | null;

  @Column({ type: 'bytea', nullable: true })
  hash: Buffer | null;
}
