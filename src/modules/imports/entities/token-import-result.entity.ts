import { Column, Entity, PrimaryColumn } from 'typeorm';

export const RESULT_STATUSES = ['imported', 'duplicate', 'failed'] as const;
export type ResultStatus = (typeof RESULT_STATUSES)[number];

/** What became of one line of an import: never a card number, a processor's token only sealed. */
@Entity({ name: 'token_import_results' })
export class TokenImportResultEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'import_id', type: 'uuid' })
  importId: string;

  /** 1-based line of the file (a CSV file's header is line 1). */
  @PrimaryColumn({ type: 'integer' })
  line: number;

  @Column({ type: 'varchar', length: 10 })
  status: ResultStatus;

  @Column({ name: 'external_id', type: 'varchar', length: 200, nullable: true })
  externalId: string | null;

  @Column({ name: 'token_id', type: 'varchar', length: 400, collation: 'C', nullable: true })
  tokenId: string | null;

  /** A field name of the import format, or null where none applies. */
  @Column({ name: 'error_field', type: 'varchar', length: 140, nullable: true })
  errorField: string | null;

  @Column({ name: 'error_code', type: 'varchar', length: 60, nullable: true })
  errorCode: string | null;

  /**
   * The line's processor token (`connection_id`, `connection_token`, `connection_customer`,
   * `network_transaction_id`) as JSON sealed under the tenant's key, kept for the stored card.
   */
  @Column({ type: 'bytea', nullable: true })
  connection: Buffer | null;
}
