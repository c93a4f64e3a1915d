import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** A pre-configured proxy: requests naming its key go to its destination. */
@Entity({ name: 'proxies' })
@Index('proxies_tenant_created_idx', ['tenantId', 'createdAt', 'id'])
@Index('proxies_key_key', ['key', 'tenantId'], { unique: true })
export class ProxyEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  /** `key_prx_...`: an address, not a credential; found without a tenant, as requests name none. */
  @Column({ type: 'varchar', length: 100 })
  key: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ name: 'destination_url', type: 'varchar', length: 2000 })
  destinationUrl: string;

  @Column({ name: 'require_auth', type: 'boolean', default: true })
  requireAuth: boolean;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'modified_by', type: 'uuid', nullable: true })
  modifiedBy: string | null;

  @Column({ name: 'modified_at', type: 'timestamptz', nullable: true })
  modifiedAt: Date | null;
}
