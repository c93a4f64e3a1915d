import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { AccessRuleDto } from '../../../common/auth/access-rule.dto';
import { APPLICATION_TYPES, type ApplicationType } from '../../../common/auth/permissions';
import { OffsetPaginationDto } from '../../../common/pagination/offset-pagination.dto';

export class ApiKeyDto {
  id: string;

  /** The clear key: present only in the response that created it. */
  @ApiPropertyOptional({ example: 'key_pvt_4TWYdFvN8sC5ZqJt7hEmRk2bXa9GpLwD3uVnQy6fHs1' })
  key?: string;

  created_by?: string | null;

  created_at: string;
}

export class ApplicationDto {
  id: string;
  tenant_id: string;
  name: string;

  @ApiProperty({ enum: APPLICATION_TYPES })
  type: ApplicationType;

  permissions: string[];
  rules: AccessRuleDto[];

  /** Public applications only: the origins whose pages may embed the card elements. */
  @ApiPropertyOptional({ type: [String], example: ['https://shop.example'] })
  allowed_origins?: string[];

  /** The clear key of the application's first key: present only in the create response. */
  key?: string;

  keys: ApiKeyDto[];
  created_by: string | null;
  created_at: string;
  modified_by: string | null;
  modified_at: string | null;
}

export class ApplicationPaginationDto extends OffsetPaginationDto {
  /** Cursor of the next page (pass it as `start`); absent on the last page. */
  after?: string;
}

export class ApplicationPageDto {
  pagination: ApplicationPaginationDto;
  data: ApplicationDto[];
}

export class PermissionDto {
  /** @example "token:create" */
  type: string;
  description: string;

  @ApiProperty({ enum: APPLICATION_TYPES, isArray: true })
  application_types: ApplicationType[];
}
