import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { OffsetPaginationQueryDto } from '../../../common/pagination/offset-pagination.dto';

const asArray = ({ value }: { value: unknown }): unknown => (Array.isArray(value) ? value : [value]);

export class ListProxiesQueryDto extends OffsetPaginationQueryDto {
  /** Only these proxies (repeat the parameter for several). */
  @ApiPropertyOptional({ type: [String], format: 'uuid' })
  @IsOptional()
  @Transform(asArray)
  @ArrayMaxSize(100)
  @IsUUID('all', { each: true })
  id?: string[];

  /** Only proxies whose name contains this text (case-insensitive). */
  @IsOptional()
  @IsString()
  @MaxLength(200)
  name?: string;
}
