import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Length, Max, MaxLength, Min, ValidateBy } from 'class-validator';
import { isInstant } from '../../../common/dates';
import {
  ENTITY_TYPES,
  type EntityType,
  LOG_ENTITY_TYPES,
  type LogEntityType,
  OPERATIONS,
  type Operation,
} from '../../../common/audit/audit.types';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../../common/pagination/offset-pagination.dto';

/** An ISO 8601 date-time or date: see parseInstant. */
const IsInstant = (field: string): PropertyDecorator =>
  ValidateBy({
    name: 'isInstant',
    validator: {
      validate: (value) => isInstant(value),
      defaultMessage: () =>
        `${field} must be an ISO 8601 date-time (Z, ±hh:mm or ±hhmm; none is UTC) or date (YYYY-MM-DD)`,
    },
  });

export class ListLogsQueryDto {
  /** Only logs of this entity type; `card` and `bank` select the rows of tokens of that type. */
  @ApiPropertyOptional({ enum: Object.keys(LOG_ENTITY_TYPES), type: 'string' })
  @IsOptional()
  @IsIn(Object.keys(LOG_ENTITY_TYPES))
  entity_type?: LogEntityType;

  /** Only logs of this entity (a token id may be 400 characters long). */
  @IsOptional()
  @IsString()
  @Length(1, 400)
  entity_id?: string;

  /** Logs created at or after this time (ISO 8601). */
  @IsOptional()
  @IsInstant('start_date')
  start_date?: string;

  /** Logs created before this time (ISO 8601). */
  @IsOptional()
  @IsInstant('end_date')
  end_date?: string;

  /** The cursor from `pagination.after` of the previous page. */
  @IsOptional()
  @IsString()
  @MaxLength(500)
  start?: string;

  /** Page number, for clients that page by number (costlier than `start` on deep pages). */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  page?: number;

  /** Results per page, 1 to 100. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  size: number = DEFAULT_PAGE_SIZE;
}

export class LogDto {
  id: string;
  tenant_id: string;
  /** The application that acted (for a session key, the public application that created the session). */
  actor_id: string | null;
  /**
   * `buyer` for a shopper's choice on a payment approval page, `anonymous` for a request through a
   * proxy without `require_auth`, `system` for the service's own work, such as a connection's
   * verification (no actor id for any of these three).
   */
  @ApiProperty({ enum: ['application', 'buyer', 'anonymous', 'system'] })
  actor_type: string;
  @ApiProperty({ enum: Object.keys(ENTITY_TYPES) })
  entity_type: EntityType;
  entity_id: string | null;
  @ApiProperty({ enum: OPERATIONS })
  operation: Operation;
  message: string;
  created_at: string;
}

export class LogPaginationDto {
  page_size: number;
  /** Cursor of the next page; absent on the last page. */
  after?: string;
  /** With `page` only. */
  total_items?: number;
  page_number?: number;
  total_pages?: number;
}

export class LogPageDto {
  pagination: LogPaginationDto;
  @ApiProperty({ type: [LogDto] })
  data: LogDto[];
}

export class EntityTypeDto {
  /** @example "Token" */
  display_name: string;
  /** @example "token" */
  value: string;
}
