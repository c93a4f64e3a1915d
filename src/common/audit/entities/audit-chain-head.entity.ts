import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The end of a tenant's audit hash chain: the last sealed position and its hash. */
@Entity({ name: 'audit_chain_heads' })
export class AuditChainHeadEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** A bigint, as text. */
  @Column({ type: 'bigint' })
  seq: string;

  @Column({ type: 'bytea' })
  hash: Buffer;
}
