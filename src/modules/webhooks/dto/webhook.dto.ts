import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  ArrayUnique,
  IsArray,
  IsEmail,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Max,
  MaxLength,
  Min,
} from 'class-validator';
import { EVENT_TYPES } from '../../../common/events/event-outbox';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../../common/pagination/offset-pagination.dto';
import type { WebhookStatus } from '../entities/webhook.entity';

const STATUSES: WebhookStatus[] = ['enabled', 'disabled'];

export class CreateWebhookDto {
  /** @example "Payments backend" */
  @IsString()
  @Length(1, 200)
  name: string;

  /**
   * Where events are sent (`POST`). Must pass the outbound policy: http or https, and a public address
   * unless listed in OUTBOUND_ALLOWED_HOSTS.
   * @example "https://receiver.example/hooks/vault"
   */
  @IsString()
  @MaxLength(2000)
  url: string;

  /** The event types the webhook receives (at least one, no repeats; see GET /webhooks/event-types). */
  @ApiProperty({
    type: String,
    isArray: true,
    enum: [...EVENT_TYPES],
    example: ['token:created', 'transaction:updated'],
  })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(EVENT_TYPES.length)
  @ArrayUnique()
  @IsString({ each: true })
  events: string[];

  /** An address to tell when the webhook is disabled after failing. */
  @ApiPropertyOptional({ type: String, nullable: true, example: 'ops@merchant.example' })
  @IsOptional()
  @IsEmail()
  @MaxLength(320)
  notify_email?: string | null;
}

/**
 * PUT: name, url and events are replaced; `status` and `notify_email` keep their value when omitted
 * (`notify_email: null` clears it). Setting `status: "enabled"` starts the failure count afresh.
 */
export class UpdateWebhookDto extends CreateWebhookDto {
  @ApiPropertyOptional({ enum: STATUSES })
  @IsOptional()
  @IsIn(STATUSES)
  status?: WebhookStatus;
}

export class WebhookDto {
  id: string;
  tenant_id: string;
  @ApiProperty({ enum: STATUSES })
  status: WebhookStatus;
  name: string;
  url: string;
  @ApiProperty({ type: [String] })
  events: string[];
  @ApiProperty({ type: String, nullable: true })
  notify_email: string | null;
  @ApiProperty({ type: String, nullable: true })
  created_by: string | null;
  created_at: string;
  @ApiProperty({ type: String, nullable: true })
  modified_by: string | null;
  @ApiProperty({ type: String, nullable: true })
  modified_at: string | null;
}

export class CreatedWebhookDto extends WebhookDto {
  /**
   * The signing secret (Standard Webhooks): shown in this response only, never again.
   * @example "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
   */
  secret: string;
}

export class ListWebhooksQueryDto {
  /** The cursor from `pagination.next` of the previous page. */
  @IsOptional()
  @IsString()
  @MaxLength(500)
  start?: string;

  /** Results per page, 1 to 100. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  size: number = DEFAULT_PAGE_SIZE;
}

export class WebhookPaginationDto {
  page_size: number;
  /** Cursor of the next page (pass it as `start`); absent on the last page. */
  next?: string;
}

export class WebhookPageDto {
  pagination: WebhookPaginationDto;
  @ApiProperty({ type: [WebhookDto] })
  data: WebhookDto[];
}
