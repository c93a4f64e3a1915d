import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A buyer of a tenant: who a merchant charges again, with the cards stored for it (`buyer_payment_methods`). */
@Entity({ name: 'buyers' })
export class BuyerEntity {
  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  /** The merchant's own id of the buyer: unique in the tenant. */
  @Column({ name: 'external_identifier', type: 'varchar', length: 200, nullable: true })
  externalIdentifier: string | null;

  @Column({ name: 'display_name', type: 'varchar', length: 200, nullable: true })
  displayName: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
