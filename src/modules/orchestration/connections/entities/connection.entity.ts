import { Column, Entity, PrimaryColumn } from 'typeorm';

import type { ConnectionEnvironment } from '../../formulas/environments';

export { CONNECTION_ENVIRONMENTS, type ConnectionEnvironment } from '../../formulas/environments';

export interface ConnectionField {
  key: string;
  /** Null for a secret field: its value is in `secrets`, sealed. */
  value: string | null;
}

/** A connection to a payment vendor, built from a formula; secret field values sealed with the tenant's key. */
@Entity({ name: 'connections' })
export class ConnectionEntity {
  /** The primary key is (tenant_id, id): a table that can be distributed by tenant (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ name: 'formula_id', type: 'varchar', length: 60 })
  formulaId: string;

  @Column({ type: 'varchar', length: 20 })
  method: string;

  @Column({ name: 'display_name', type: 'varchar', length: 100 })
  displayName: string;

  /** Every field in the order given; secret fields with a null value. */
  @Column({ type: 'jsonb' })
  fields: ConnectionField[];

  @Column({ type: 'bytea', nullable: true })
  secrets: Buffer | null;

  @Column({ name: 'accepted_countries', type: 'text', array: true })
  acceptedCountries: string[];

  @Column({ name: 'accepted_currencies', type: 'text', array: true })
  acceptedCurrencies: string[];

  @Column({ type: 'boolean' })
  active: boolean;

  /** `sandbox`: the built-in simulator; `test`/`live`: the vendor's test or production endpoints. */
  @Column({ type: 'varchar', length: 10, default: 'sandbox' })
  environment: ConnectionEnvironment;

  @Column({ type: 'varchar', length: 20 })
  status: 'pending' | 'available' | 'failed';

  @Column({ name: 'status_reason', type: 'text', nullable: true })
  statusReason: string | null;

  @Column({ name: 'three_d_secure_enabled', type: 'boolean' })
  threeDSecureEnabled: boolean;

  /** Moves on at every update, so that a verification of an older version does not apply. */
  @Column({ type: 'integer', default: 1 })
  version: number;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'deleted_at', type: 'timestamptz', nullable: true })
  deletedAt: Date | null;
}
