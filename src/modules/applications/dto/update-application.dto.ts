import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsOptional, IsString, Length, ValidateNested } from 'class-validator';
import { AccessRuleDto } from '../../../common/auth/access-rule.dto';

export class UpdateApplicationDto {
  @IsString()
  @Length(1, 200)
  name: string;

  /** Replaces the permissions when given; omitted keeps them. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  permissions?: string[];

  /** Replaces the rules when given; omitted keeps them. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => AccessRuleDto)
  rules?: AccessRuleDto[];
}
