import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsOptional,
  IsString,
  Length,
  ValidateNested,
} from 'class-validator';
import { AccessRuleDto } from '../../../common/auth/access-rule.dto';
import { APPLICATION_TYPES, type ApplicationType } from '../../../common/auth/permissions';

export class CreateApplicationDto {
  /** @example "Checkout backend" */
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiProperty({ enum: APPLICATION_TYPES, type: 'string' })
  @IsIn(APPLICATION_TYPES)
  type: ApplicationType;

  /** Permissions held on every container; each must be allowed for the application type. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  permissions?: string[];

  /** Container-scoped grants, evaluated by ascending priority. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => AccessRuleDto)
  rules?: AccessRuleDto[];

  /** Create the application's first key (default true). */
  @IsOptional()
  @IsBoolean()
  create_key?: boolean;
}
