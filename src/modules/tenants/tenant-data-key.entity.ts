import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A generation of a tenant's data key (`vault keys rotate --tenant-keys`): a random key sealed under the
 * tenant's root key. Generation 0, derived from the root key, has no row.
 */
@Entity({ name: 'tenant_data_keys' })
export class TenantDataKeyEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ type: 'integer' })
  generation: number;

  @Column({ name: 'sealed_key', type: 'bytea' })
  sealedKey: Buffer;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}
