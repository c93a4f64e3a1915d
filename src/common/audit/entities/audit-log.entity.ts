import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EntityType, Operation } from '../audit.types';

/** Who acted on an audit log row's entity. */
export type ActorType = 'application' | 'buyer' | 'anonymous' | 'system';

/**
 * One audit log row: appended, never updated (a trigger refuses it) but for its place in the tenant's hash
 * chain (`seq`, `prev_hash`, `hash`), which the chain job seals later.
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
  entityType: EntityType;

  @Column({ name: 'entity_id', type: 'text', nullable: true })
  entityId: string | null;

  @Column({ type: 'varchar', length: 20 })
  operation: Operation;

  @Column({ type: 'text' })
  message: string;

  /** The token's type on rows of tokens written since migration 19; null otherwise. */
  @Column({ name: 'token_type', type: 'varchar', length: 10, nullable: true })
  tokenType: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** The row's position in its tenant's chain (a bigint, as text); null until sealed. */
  @Column({ type: 'bigint', nullable: true })
  seq: string | null;

  @Column({ name: 'prev_hash', type: 'bytea', nullable: true })
  prevHash: Buffer | null;

  @Column({ type: 'bytea', nullable: true })
  hash: Buffer | null;
}
