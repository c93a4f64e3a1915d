import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'tenants' })
export class TenantEntity {
  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  /** Version of the master key that wraps this tenant's root key. */
  @Column({ name: 'key_version', type: 'varchar', length: 20, nullable: true })
  keyVersion: string | null;

  /** The tenant's root key, sealed by that master key; never stored in clear. */
  @Column({ name: 'wrapped_key', type: 'bytea', nullable: true })
  wrappedKey: Buffer | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}
