import { IsIn, IsOptional } from 'class-validator';
import { APPLICATION_TYPES, type ApplicationType } from '../../../common/auth/permissions';
import { OffsetPaginationQueryDto } from '../../../common/pagination/offset-pagination.dto';

export class ListApplicationsQueryDto extends OffsetPaginationQueryDto {
  /** Only applications of this type. */
  @IsOptional()
  @IsIn(APPLICATION_TYPES)
  type?: ApplicationType;
}

export class ListPermissionsQueryDto {
  /** Only permissions this application type may hold. */
  @IsOptional()
  @IsIn(APPLICATION_TYPES)
  application_type?: ApplicationType;
}
