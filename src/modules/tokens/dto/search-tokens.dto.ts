import { IsString, Length } from 'class-validator';
import { OffsetPaginationQueryDto } from '../../../common/pagination/offset-pagination.dto';

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
