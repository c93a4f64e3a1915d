import { ApiProperty } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional, IsString, Length } from 'class-validator';
import type { AccessRuleDto } from '../../../common/auth/access-rule.dto';
import { GrantField, GrantsDto } from '../../../common/auth/grants.dto';
import { APPLICATION_TYPES, type ApplicationType } from '../../../common/auth/permissions';

export class CreateApplicationDto extends GrantsDto {
  /** @example "Checkout backend" */
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiProperty({ enum: APPLICATION_TYPES, type: 'string' })
  @IsIn(APPLICATION_TYPES)
  type: ApplicationType;

  /** Permissions held on every container; each must be allowed for the application type. */
  @GrantField()
  declare permissions?: string[];

  /** Container-scoped grants, evaluated by ascending priority. */
  @GrantField()
  declare rules?: AccessRuleDto[];

  /** Create the application's first key (default true). */
  @IsOptional()
  @IsBoolean()
  create_key?: boolean;
}
