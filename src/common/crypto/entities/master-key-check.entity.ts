import type { KeyProviderName } from '../key-encryption-key';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A value sealed with one master key version, so that an instance started with another key refuses to run. */
@Entity({ name: 'master_key_checks' })
export class MasterKeyCheckEntity {
  @PrimaryColumn({ type: 'varchar', length: 20 })
  version: string;

  @Column({ name: 'check_value', type: 'bytea' })
  checkValue: Buffer;

  /** `env` (ENCRYPTION_KEYS or the embedded key file) or `split` (shares held by custodians). */
  @Column({ type: 'varchar', length: 10, default: 'env' })
  provider: KeyProviderName;

  /** Under `split`: how many shares open the key, of how many made. */
  @Column({ type: 'int', nullable: true })
  threshold: number | null;

  @Column({ type: 'int', nullable: true })
  shares: number | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
