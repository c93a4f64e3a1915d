import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AccessRule } from '../../../common/auth/access-rule';

/**
 * A session: created with a key (for the buyer's device) and a nonce (for the server that authorizes it),
 * both kept as SHA-256 digests; authorized once, with the permissions and rules it may use.
 */
@Entity({ name: 'sessions' })
export class SessionEntity {
  @PrimaryColumn('uuid')
  id: string;

  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'application_id', type: 'uuid' })
  applicationId: string;

  @Column({ name: 'key_hash', type: 'bytea' })
  keyHash: Buffer;

  /** Null once the session is authorized (a nonce authorizes once). */
  @Column({ name: 'nonce_hash', type: 'bytea', nullable: true })
  nonceHash: Buffer | null;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  permissions: string[];

  @Column({ type: 'jsonb', default: () => "'[]'" })
  rules: AccessRule[];

  @Column({ name: 'authorized_by', type: 'uuid', nullable: true })
  authorizedBy: string | null;

  @Column({ name: 'authorized_at', type: 'timestamptz', nullable: true })
  authorizedAt: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
