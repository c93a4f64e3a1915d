import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { OffsetPaginationQueryDto } from '../../../common/pagination/offset-pagination.dto';
import {
  IMPORT_FORMATS,
  IMPORT_STATUSES,
  type ImportFormat,
  type ImportStatus,
} from '../entities/token-import.entity';
import { RESULT_STATUSES, type ResultStatus } from '../entities/token-import-result.entity';

export class ImportKeyDto {
  @ApiProperty({ description: 'The armored OpenPGP public key to encrypt card files to.' })
  public_key: string;

  @ApiProperty({ example: '01E1E68840E8F4C72D14787CC1642A6462C50993' })
  fingerprint: string;

  @ApiProperty({ example: 'ed25519/cv25519' })
  algorithm: string;

  created_at: string;
}

export class CreateImportQueryDto {
  /** The file's format; without it, the extension of the file name in the message (`.csv`, `.jsonl`). */
  @IsOptional()
  @IsIn(IMPORT_FORMATS)
  @ApiPropertyOptional({ enum: IMPORT_FORMATS })
  format?: ImportFormat;
}

export class ImportDto {
  id: string;

  @ApiProperty({ enum: IMPORT_STATUSES })
  status: ImportStatus;

  @ApiProperty({ enum: IMPORT_FORMATS })
  format: ImportFormat;

  /** Every data line of the file, failed ones included; null until the file was read through once. */
  total: number | null;
  imported: number;
  duplicates: number;
  failed: number;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  /** Why a failed import failed (a code; docs/migration.md). */
  error: { code: string } | null;
}

export class ImportErrorDto {
  /** The column or field at fault, or null where none applies. */
  field: string | null;
  code: string;
}

export class ImportResultDto {
  /** The 1-based line of the file (a CSV file's header is line 1). */
  line: number;
  external_id?: string;
  token_id?: string;

  @ApiProperty({ enum: RESULT_STATUSES })
  status: ResultStatus;

  error?: ImportErrorDto;
}

export class ImportResultPageDto {
  pagination: { total_items: number; page_number: number; page_size: number; total_pages: number };
  data: ImportResultDto[];
}

export class ImportResultsQueryDto extends OffsetPaginationQueryDto {}
