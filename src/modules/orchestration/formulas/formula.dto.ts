import { ApiProperty } from '@nestjs/swagger';

export class FormulaFieldDto {
  key: string;
  display_name: string;
  required: boolean;
  /** @example "text" */
  format: string;
  /** Secret values are stored encrypted and shown as `********`. */
  secret: boolean;
}

export class FormulaFeaturesDto {
  three_d_secure_pass_through: boolean;
  delayed_capture: boolean;
  partial_capture: boolean;
  partial_refunds: boolean;
  refunds: boolean;
  zero_auth: boolean;
  void: boolean;
  /** Takes network tokens (a DPAN with its cryptogram: Apple Pay, Google Pay, merchant network tokens); routing skips a connection without it for such a token. */
  network_tokens: boolean;
}

export class ConnectionFormulaDto {
  /** @example "stripe-card" */
  id: string;
  /** @example "Stripe" */
  display_name: string;
  /** @example "card" */
  method: string;
  @ApiProperty({ type: [FormulaFieldDto] })
  fields: FormulaFieldDto[];
  /** ISO 4217 codes. */
  supported_currencies: string[];
  /** ISO 3166-1 alpha-2 codes. */
  supported_countries: string[];
  supported_features: FormulaFeaturesDto;
}
