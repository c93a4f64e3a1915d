import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import {
  CONDITION_ATTRIBUTES,
  CONDITION_OPERATORS,
  CONTAINER_FORMAT,
  CONTAINER_PATTERN,
  RULE_TRANSFORMS,
} from './access-rule';

export class RuleConditionDto {
  @ApiProperty({ enum: CONDITION_ATTRIBUTES, type: 'string' })
  @IsIn(CONDITION_ATTRIBUTES)
  attribute: (typeof CONDITION_ATTRIBUTES)[number];

  @ApiProperty({ enum: CONDITION_OPERATORS, type: 'string' })
  @IsIn(CONDITION_OPERATORS)
  operator: (typeof CONDITION_OPERATORS)[number];

  @IsString()
  @Length(1, 1000)
  value: string;
}

/** An access rule: grants `permissions` on a container (and below it), or on tokens matching conditions. */
export class AccessRuleDto {
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  /** Rules are evaluated in ascending priority; unique within one application or session. */
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  priority: number;

  /** A container path such as `/pci/` or `/` (the root); the rule covers it and every container below it. */
  @IsOptional()
  @IsString()
  @Matches(CONTAINER_PATTERN, { message: CONTAINER_FORMAT })
  container?: string;

  /** Session rules only: every condition must hold for the rule to match. */
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @ValidateNested({ each: true })
  @Type(() => RuleConditionDto)
  conditions?: RuleConditionDto[];

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(50)
  @IsString({ each: true })
  permissions: string[];

  /**
   * `mask` (default), `redact` (neither mask nor data) or `reveal` (data in clear on reads, never the CVC;
   * private applications and sessions only, every revealed token is audited).
   */
  @ApiPropertyOptional({ enum: RULE_TRANSFORMS, type: 'string', default: 'mask' })
  @IsOptional()
  @IsIn(RULE_TRANSFORMS, { message: 'transform must be mask, redact or reveal' })
  transform?: (typeof RULE_TRANSFORMS)[number];
}
