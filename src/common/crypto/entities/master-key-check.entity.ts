import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A value sealed with one master key version, so that an instance started with another key refuses to run. */
@Entity({ name: 'master_key_checks' })
export class MasterKeyCheckEntity {
  @PrimaryColumn({ type: 'varchar', length: 20 })
  version: string;

  @Column({ name: 'check_value', type: 'bytea' })
  checkValue: Buffer;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
