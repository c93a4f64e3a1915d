import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length } from 'class-validator';
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

  /**
   * Public applications only: up to 20 origins (`https://shop.example`, `http://127.0.0.1:8080`) whose
   * pages may embed the card elements' frames. Replaces them when given; omitted keeps them.
   */
  @ApiPropertyOptional({ type: [String], maxItems: 20, example: ['https://shop.example'] })
  @IsOptional()
  allowed_origins?: unknown;
}
