import { IsString, Length } from 'class-validator';
import type { AccessRuleDto } from '../../../common/auth/access-rule.dto';
import { GrantField, GrantsDto } from '../../../common/auth/grants.dto';

export class UpdateApplicationDto extends GrantsDto {
  @IsString()
  @Length(1, 200)
  name: string;

  /** Replaces the permissions when given; omitted keeps them. */
  @GrantField()
  declare permissions?: string[];

  /** Replaces the rules when given; omitted keeps them. */
  @GrantField()
  declare rules?: AccessRuleDto[];
}
