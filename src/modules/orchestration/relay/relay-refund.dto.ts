import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, IsUUID, Length, Matches, Max, Min } from 'class-validator';
import { OffsetPaginationDto } from '../../../common/pagination/offset-pagination.dto';
import { MAX_AMOUNT } from '../transactions/transaction.dto';

export const RELAY_REFUND_STATUSES = ['processing', 'succeeded', 'failed'] as const;

/** What a vendor's payment id may look like at all; each rail's own form is checked by the service. */
export const VENDOR_PAYMENT_ID_PATTERN = /^[A-Za-z0-9_.:=+/-]{1,100}$/;

/** `POST /orchestration/relay/refunds`: a refund of a payment made at the vendor before the migration. */
export class CreateRelayRefundDto {
  /** The tenant's connection to the vendor the payment was made at (its credentials make the call). */
  @IsUUID()
  connection_id: string;

  /**
   * The vendor's id of the payment: a Stripe PaymentIntent (`pi_…`) or charge (`ch_…`), an Adyen
   * `pspReference`, a Checkout.com payment (`pay_…`), a Braintree transaction id.
   * @example "pi_3PqL2mHk8xJ7Zt0B1aB2cD3e"
   */
  @ApiProperty({ pattern: VENDOR_PAYMENT_ID_PATTERN.source })
  @IsString()
  @Matches(VENDOR_PAYMENT_ID_PATTERN, {
    message: 'vendor_payment_id must be 1 to 100 letters, digits and _ . : = + / -',
  })
  vendor_payment_id: string;

  /** In the currency's smallest unit; at most what is left to refund of the payment at the vendor. */
  @IsInt()
  @Min(1)
  @Max(MAX_AMOUNT)
  amount: number;

  /** ISO 4217, the payment's currency. @example "USD" */
  @IsString()
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be a 3-letter ISO 4217 code in upper case' })
  currency: string;

  /** Why, in your words (kept with the refund; Stripe also gets `duplicate`, `fraudulent` or `requested_by_customer`). */
  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  reason?: string;
}

export class RelayRefundDto {
  @ApiProperty({ enum: ['relay_refund'] })
  type: 'relay_refund';
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ format: 'uuid' })
  connection_id: string;
  vendor_payment_id: string;
  amount: number;
  currency: string;
  @ApiProperty({ type: String, nullable: true })
  reason: string | null;
  /** `processing` until the vendor confirms it (Adyen and Checkout.com confirm later: a notification or the settlement job). */
  @ApiProperty({ enum: RELAY_REFUND_STATUSES })
  status: (typeof RELAY_REFUND_STATUSES)[number];
  /** The vendor's id of the refund, once it named one. */
  @ApiProperty({ type: String, nullable: true })
  vendor_refund_id: string | null;
  /** Why it failed (the vendor's code), else null. */
  @ApiProperty({ type: String, nullable: true })
  error_code: string | null;
  created_at: string;
  updated_at: string;
}

export class RelayRefundPageDto {
  pagination: OffsetPaginationDto;
  @ApiProperty({ type: [RelayRefundDto] })
  data: RelayRefundDto[];
}
