import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, Length, Matches, MaxLength } from 'class-validator';
import { OffsetPaginationDto } from '../../../common/pagination/offset-pagination.dto';
import { WALLETS, type MerchantKeyStatus, type Wallet } from '../entities/wallet-merchant-key.entity';

/** A merchant key as the API shows it: never its private half. */
export class MerchantKeyDto {
  id: string;

  @ApiProperty({ enum: WALLETS })
  wallet: Wallet;

  /** `pending`: an Apple Pay key waiting for its certificate; `active`: payloads encrypted to it decrypt. */
  @ApiProperty({ enum: ['pending', 'active'] })
  status: MerchantKeyStatus;

  /** Base64 of the uncompressed P-256 point (0x04 || X || Y), as Google's console takes it. */
  public_key: string;

  /** Apple Pay: base64 SHA-256 of the key's SubjectPublicKeyInfo (what payloads name as `publicKeyHash`). */
  @ApiPropertyOptional({ type: String, nullable: true })
  public_key_hash: string | null;

  /** Apple Pay: hex SHA-256 of the merchant id, from the certificate's merchant identifier field. */
  @ApiPropertyOptional({ type: String, nullable: true })
  merchant_identifier: string | null;

  /** Apple Pay: when the certificate expires. */
  @ApiPropertyOptional({ type: String, format: 'date-time', nullable: true })
  not_after: string | null;

  /** Google Pay: the gateway merchant id (the recipient id is `gateway:<this>`). */
  @ApiPropertyOptional({ type: String, nullable: true })
  gateway_merchant_id: string | null;

  @ApiPropertyOptional({ type: String, nullable: true })
  created_by: string | null;

  created_at: string;
}

export class CreatedApplePayKeyDto extends MerchantKeyDto {
  /** The PEM certificate signing request to upload to Apple as the payment processing certificate's. */
  csr: string;
}

export class MerchantKeyPageDto {
  pagination: OffsetPaginationDto;
  data: MerchantKeyDto[];
}

export class ApplePayCertificateDto {
  /**
   * The payment processing certificate Apple issued for this key's CSR (PEM).
   * @example "-----BEGIN CERTIFICATE-----\nMIIE...\n-----END CERTIFICATE-----"
   */
  @IsString()
  @MaxLength(20_000)
  certificate: string;
}

export class CreateGooglePayKeyDto {
  /**
   * The merchant's gateway merchant id: Google's payment request names it as `gatewayMerchantId`, and
   * the payload's recipient is `gateway:<this>`.
   * @example "acme-shop"
   */
  @IsString()
  @Length(1, 200)
  @Matches(/^[\x21-\x7e]+$/, { message: 'gateway_merchant_id must be printable ASCII without spaces' })
  gateway_merchant_id: string;
}
