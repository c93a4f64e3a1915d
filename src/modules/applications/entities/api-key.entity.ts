import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** An application key. Only the SHA-256 digest of the key is kept; the clear key is shown once. */
@Entity({ name: 'api_keys' })
@Index('api_keys_tenant_application_idx', ['tenantId', 'applicationId', 'createdAt'])
// The key is looked up by its digest before the tenant is known: digest first, tenant second (docs/scaling.md).
@Index('api_keys_key_hash_key', ['keyHash', 'tenantId'], { unique: true })
export class ApiKeyEntity {
  /** The primary key is (tenant_id, id), as on every tenant-scoped table. */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ name: 'application_id', type: 'uuid' })
  applicationId: string;

  @Column({ name: 'key_hash', type: 'bytea' })
  keyHash: Buffer;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}
