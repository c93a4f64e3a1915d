import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import {
  OffsetPaginationDto,
  OffsetPaginationQueryDto,
} from '../../../common/pagination/offset-pagination.dto';

/** The body of create and update: on update a field left out keeps its value and `null` clears it. */
export class BuyerRequestDto {
  /** The merchant's own id of the buyer, 1 to 200 characters, unique in the tenant. @example "customer-8231" */
  @ApiPropertyOptional({ type: String, nullable: true })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  external_identifier?: string | null;

  /** 1 to 200 characters. @example "Ada Lovelace" */
  @ApiPropertyOptional({ type: String, nullable: true })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  display_name?: string | null;
}

export class BuyerDto {
  @ApiProperty({ enum: ['buyer'] })
  type: 'buyer';

  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ type: String, nullable: true })
  external_identifier: string | null;

  @ApiProperty({ type: String, nullable: true })
  display_name: string | null;

  @ApiProperty({ format: 'date-time' })
  created_at: string;

  @ApiProperty({ format: 'date-time' })
  updated_at: string;
}

export class ListBuyersQueryDto extends OffsetPaginationQueryDto {
  /** Only the buyer with this external identifier. */
  @IsOptional()
  @IsString()
  @MaxLength(200)
  external_identifier?: string;

  /** Buyers whose display name or external identifier starts with this text (case-insensitive). */
  @IsOptional()
  @IsString()
  @Length(1, 200)
  search?: string;
}

export class BuyerPageDto {
  pagination: OffsetPaginationDto;
  data: BuyerDto[];
}

/** The body of `POST /orchestration/buyers/{id}/payment-methods`. */
export class StorePaymentMethodDto {
  /** A card token the key may use (`token:use`). */
  @IsString()
  @Length(1, 400)
  token: string;
}

/** A card stored for a buyer. */
export class StoredPaymentMethodDto {
  @ApiProperty({ enum: ['payment-method'] })
  type: 'payment-method';

  /** The card token's id. */
  id: string;

  @ApiProperty({ enum: ['card'] })
  method: 'card';

  @ApiProperty({ format: 'uuid' })
  buyer_id: string;

  /** @example "visa" */
  @ApiProperty({ type: String, nullable: true })
  scheme: string | null;

  /** The card's last four digits. @example "4242" */
  label: string;

  /** MM/YY. @example "12/30" */
  expiration_date: string;

  /** `expired` once the card's expiry month has passed. */
  @ApiProperty({ enum: ['active', 'expired'] })
  status: 'active' | 'expired';

  @ApiProperty({ format: 'date-time' })
  created_at: string;

  /** The last successful transaction with the card; null until the first. */
  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  last_used_at: string | null;

  /** The processors' tokens for this card, by connection, masked (docs/buyers.md). */
  connection_tokens: ConnectionTokenDto[];
}

/** A processor's token for a stored card at one connection, as answers show it. */
export class ConnectionTokenDto {
  @ApiProperty({ format: 'uuid' })
  connection_id: string;

  /** Masked: its last four characters only (none of a short token). @example "****Xk2c" */
  token: string;

  /** The processor's customer (Stripe's customer id, Adyen's shopper reference). */
  @ApiProperty({ type: String, nullable: true })
  connection_customer: string | null;

  /** The network's id of the payment that set up the mandate. */
  @ApiProperty({ type: String, nullable: true })
  network_transaction_id: string | null;
}

/** One processor's token, as given. */
export class ConnectionTokenEntryDto {
  /** A connection of the tenant. */
  @IsUUID()
  connection_id: string;

  /** The processor's token for the card at that connection (a secret: stored sealed, answered masked). */
  @IsString()
  @Length(1, 255)
  token: string;

  /** Stripe's customer id (required at stripe-card), Adyen's shopper reference (required at adyen-card). */
  @ApiPropertyOptional({ type: String, nullable: true })
  @IsOptional()
  @IsString()
  @Length(1, 256)
  connection_customer?: string | null;

  /** The network transaction id of the mandate's first payment, 1 to 64 characters. */
  @ApiPropertyOptional({ type: String, nullable: true })
  @IsOptional()
  @IsString()
  @Length(1, 64)
  network_transaction_id?: string | null;
}

/** The body of `PUT .../payment-methods/{id}/connection-tokens`: the card's whole list (empty clears it). */
export class SetConnectionTokensDto {
  @IsArray()
  @ArrayMaxSize(20)
  @ValidateNested({ each: true })
  @Type(() => ConnectionTokenEntryDto)
  connection_tokens: ConnectionTokenEntryDto[];
}
