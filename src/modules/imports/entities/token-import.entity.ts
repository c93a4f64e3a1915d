import { Column, Entity, PrimaryColumn } from 'typeorm';

export const IMPORT_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type ImportStatus = (typeof IMPORT_STATUSES)[number];
export const IMPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/**
 * An import job: one encrypted file of cards, its progress and its counts. `lines_done` is the
 * checkpoint, the lines of the file handled so far, written in the transaction of the tokens of each batch.
 */
@Entity({ name: 'token_imports' })
export class TokenImportEntity {
  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 12 })
  status: ImportStatus;

  @Column({ type: 'varchar', length: 8 })
  format: ImportFormat;

  /** The size of the encrypted upload. */
  @Column({ name: 'file_bytes', type: 'bigint' })
  fileBytes: string;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt: Date | null;

  /** Every data line of the file, failed ones included; null until the file was read through once. */
  @Column({ type: 'integer', nullable: true })
  total: number | null;

  @Column({ type: 'integer', default: 0 })
  imported: number;

  @Column({ type: 'integer', default: 0 })
  duplicates: number;

  @Column({ type: 'integer', default: 0 })
  failed: number;

  @Column({ name: 'lines_done', type: 'integer', default: 0 })
  linesDone: number;

  /** Why a failed job failed (a fixed code, never data). */
  @Column({ name: 'error_code', type: 'varchar', length: 60, nullable: true })
  errorCode: string | null;
}
