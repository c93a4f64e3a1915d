import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { AccessRule } from '../../../common/auth/access-rule';
import type { ApplicationType } from '../../../common/auth/permissions';

@Entity({ name: 'applications' })
@Index('applications_tenant_created_idx', ['tenantId', 'createdAt', 'id'])
export class ApplicationEntity {
  /** The primary key is (tenant_id, id): a table that can be distributed by tenant (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 20 })
  type: ApplicationType;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  permissions: string[];

  @Column({ type: 'jsonb', nullable: true })
  rules: AccessRule[] | null;

  /** A public application's origins whose pages may embed the card elements (docs/elements.md). */
  @Column({ name: 'allowed_origins', type: 'text', array: true, nullable: true })
  allowedOrigins: string[] | null;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'modified_by', type: 'uuid', nullable: true })
  modifiedBy: string | null;

  @Column({ name: 'modified_at', type: 'timestamptz', nullable: true })
  modifiedAt: Date | null;
}
