import { ApiProperty } from '@nestjs/swagger';
import { IsObject, IsString, MaxLength } from 'class-validator';

export class ApplePayTokenRequestDto {
  /**
   * The `paymentData` of Apple's `PKPaymentToken` (version `EC_v1`): `data`, `signature`, `header`
   * (`ephemeralPublicKey`, `publicKeyHash`, `transactionId`) and `version`, as the device gave it.
   */
  @ApiProperty({ type: 'object', additionalProperties: true })
  @IsObject()
  payment_data: Record<string, unknown>;
}

export class GooglePayTokenRequestDto {
  /** The `paymentMethodData.tokenizationData.token` string of Google's answer (`ECv2`), as given. */
  @IsString()
  @MaxLength(65_536)
  token: string;
}
