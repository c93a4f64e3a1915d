import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

/** `page` (from 1) and `size` (1 to 100) query parameters; extend it with a list's own filters. */
export class OffsetPaginationQueryDto {
  /** Page number, from 1. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  page: number = 1;

  /** Results per page, 1 to 100. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  size: number = DEFAULT_PAGE_SIZE;
}

/** The `pagination` member of an offset-paginated list. */
export class OffsetPaginationDto {
  total_items: number;
  page_number: number;
  page_size: number;
  total_pages: number;
}
