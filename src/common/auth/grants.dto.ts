import { Type } from 'class-transformer';
import { Allow, ArrayMaxSize, IsArray, IsOptional, IsString, ValidateNested } from 'class-validator';
import { AccessRuleDto } from './access-rule.dto';

/**
 * What applications and sessions are granted: permissions on every container and access rules. The
 * checks that depend on who grants (allowed for the type, held by the grantor) are `checkGrants` and
 * `escalations` in grants.ts. A DTO extending this one redeclares the fields (`@GrantField() declare`)
 * to describe them in its own terms.
 */
export class GrantsDto {
  /** Permissions held on every container. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  permissions?: string[];

  /** Access rules, evaluated by ascending priority. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => AccessRuleDto)
  rules?: AccessRuleDto[];
}

/**
 * Marks a `declare`d GrantsDto field in a DTO extending it. It validates nothing (GrantsDto does); it
 * keeps the field in its place among the DTO's own fields, the order in which a 400 lists invalid fields.
 */
export const GrantField = (): PropertyDecorator => Allow();
