import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsIn, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { APPLICATION_TYPES, type ApplicationType } from '../../../common/auth/permissions';
import { OffsetPaginationQueryDto } from '../../../common/pagination/offset-pagination.dto';

const asArray = ({ value }: { value: unknown }): unknown => (Array.isArray(value) ? value : [value]);

export class ListApplicationsQueryDto extends OffsetPaginationQueryDto {
  /** `pagination.after` of the previous page: continue from there (instead of `page`). */
  @IsOptional()
  @IsString()
  @MaxLength(500)
  start?: string;

  /** Only these applications (repeat the parameter for several). */
  @ApiPropertyOptional({ type: [String], format: 'uuid' })
  @IsOptional()
  @Transform(asArray)
  @ArrayMaxSize(100)
  @IsUUID('all', { each: true })
  id?: string[];

  /** Only applications of these types (repeat the parameter for several). */
  @ApiPropertyOptional({ type: [String], enum: APPLICATION_TYPES })
  @IsOptional()
  @Transform(asArray)
  @ArrayMaxSize(3)
  @IsIn(APPLICATION_TYPES, { each: true })
  type?: ApplicationType[];
}

export class ListPermissionsQueryDto {
  /** Only permissions this application type may hold. */
  @IsOptional()
  @IsIn(APPLICATION_TYPES)
  application_type?: ApplicationType;
}
