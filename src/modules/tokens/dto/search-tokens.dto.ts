import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Length, Max, MaxLength, Min } from 'class-validator';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  OffsetPaginationQueryDto,
} from '../../../common/pagination/offset-pagination.dto';

export class SearchTokensDto extends OffsetPaginationQueryDto {
  /**
   * Basis Theory's Lucene-style query: `field:value` terms joined by spaces (AND), `AND`, `OR`, `NOT`
   * (or `-` before a term) and parentheses, applied left to right. Fields: `id`, `type`, `fingerprint`,
   * `container` (a prefix of one of the token's containers), `metadata.<name>`, `data` (an exact search
   * index value), and the ranges `created_at:[from TO to]` and `expires_at:[from TO to]` (`{}` excludes
   * a bound, `*` leaves it open; ISO 8601 dates or date-times). Quote values with spaces or characters
   * other than letters, digits, `_-.@#` and the dollar sign. At most 100 terms and 10 levels of nesting; a
   * malformed query is a 400 naming the character where it fails.
   * @example "(type:card OR type:bank) AND metadata.customer_id:cust_1 AND created_at:[2026-01-01 TO *]"
   */
  @IsString()
  @Length(1, 2000)
  query: string;
}

/** POST /v2/tokens/search: the same query, cursor-paginated. */
export class SearchTokensV2Dto {
  /** The same query language as `POST /tokens/search`. @example "type:card AND NOT container:/pci/low/" */
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
