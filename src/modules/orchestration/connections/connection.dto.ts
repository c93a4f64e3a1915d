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
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { CONNECTION_ENVIRONMENTS, ConnectionEnvironment } from './entities/connection.entity';

export class ConnectionFieldDto {
  /** @example "secret_key" */
  @IsString()
  @Length(1, 100)
  key: string;

  /** Secret values are shown as `********`; sending `********` on update keeps the stored value. */
  @IsString()
  @MaxLength(2000)
  value: string;
}

/** The body of create and update: the formula, its field values, and what the connection accepts. */
export class ConnectionRequestDto {
  /** @example "stripe-card" */
  @IsString()
  @Length(1, 100)
  connection_formula_id: string;

  /** Must be the formula's method. @example "card" */
  @IsString()
  @Length(1, 20)
  method: string;

  /** @example "Stripe EU" */
  @IsString()
  @Length(1, 100)
  display_name: string;

  @IsArray()
  @ArrayMaxSize(50)
  @ValidateNested({ each: true })
  @Type(() => ConnectionFieldDto)
  fields: ConnectionFieldDto[];

  /** A non-empty subset of the formula's supported countries. */
  @IsArray()
  @ArrayMaxSize(300)
  @IsString({ each: true })
  accepted_countries: string[];

  /** A non-empty subset of the formula's supported currencies. */
  @IsArray()
  @ArrayMaxSize(300)
  @IsString({ each: true })
  accepted_currencies: string[];

  /** Usable for transactions (default true). */
  @IsOptional()
  @IsBoolean()
  active?: boolean;

  /**
   * `sandbox` (default): the built-in simulator; `test` and `live`: the vendor's test or production
   * endpoints, for formulas with a vendor adapter (`stripe-card`, `adyen-card`, `checkout-card`, `braintree-card`).
   */
  @ApiProperty({ enum: CONNECTION_ENVIRONMENTS, required: false, default: 'sandbox' })
  @IsOptional()
  @IsIn(CONNECTION_ENVIRONMENTS)
  environment?: ConnectionEnvironment;
}

export class ConnectionDto {
  id: string;
  connection_formula_id: string;
  display_name: string;
  /** Absent from the create response. */
  method?: string;
  @ApiProperty({ type: [ConnectionFieldDto] })
  fields: ConnectionFieldDto[];
  accepted_countries: string[];
  accepted_currencies: string[];
  active: boolean;
  @ApiProperty({ enum: CONNECTION_ENVIRONMENTS })
  environment: ConnectionEnvironment;
  @ApiProperty({ enum: ['pending', 'available', 'failed'] })
  status: 'pending' | 'available' | 'failed';
  three_d_secure_enabled: boolean;
}
