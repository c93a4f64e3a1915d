import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length, MaxLength } from 'class-validator';
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
}
