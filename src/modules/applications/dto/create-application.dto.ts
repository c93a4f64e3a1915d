import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
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

  /**
   * Public applications only: up to 20 origins (`https://shop.example`, `http://127.0.0.1:8080`) whose
   * pages may embed the card elements' frames. Default: none (embeddable nowhere).
   */
  @ApiPropertyOptional({ type: [String], maxItems: 20, example: ['https://shop.example'] })
  @IsOptional()
  allowed_origins?: unknown;

  /** Create the application's first key (default true). */
  @IsOptional()
  @IsBoolean()
  create_key?: boolean;
}
