import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Length, Max, MaxLength, Min } from 'class-validator';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  OffsetPaginationQueryDto,
} from '../../../common/pagination/offset-pagination.dto';

export class SearchTokensDto extends OffsetPaginationQueryDto {
  /**
   * Space-separated terms, all of which must match: `id:`, `type:`, `fingerprint:`, `container:`,
   * `metadata.<name>:`, `data:` (an exact search index value). Quote values with spaces.
   * @example "type:card metadata.customer_id:c_42"
   */
  @IsString()
  @Length(1, 2000)
  query: string;
}

/** POST /v2/tokens/search: the same query, cursor-paginated. */
export class SearchTokensV2Dto {
  /** The same query language as `POST /tokens/search`. @example "type:card" */
  @IsString()
  @Length(1, 2000)
  query: string;

  /** `pagination.next` of the previous page. */
  @IsOptional()
  @IsString()
  @MaxLength(500)
  start?: string;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  size: number = DEFAULT_PAGE_SIZE;
}
