import { ApiProperty } from '@nestjs/swagger';
import { OffsetPaginationDto } from '../../../common/pagination/offset-pagination.dto';
import type { DeliveryStatus } from '../entities/webhook-delivery.entity';

export class WebhookDeliveryDto {
  id: string;
  /** The event, sent as the `webhook-id` header: the same on every attempt. */
  event_id: string;
  /** @example "transaction:updated" */
  event_type: string;
  @ApiProperty({ enum: ['pending', 'succeeded', 'failed'] })
  status: DeliveryStatus;
  /** Attempts made so far. */
  attempts: number;
  /** The receiver's HTTP status on the last attempt (null: none yet, or no answer). */
  @ApiProperty({ type: Number, nullable: true })
  last_status_code: number | null;
  /** When a pending delivery is (next) due; null once it succeeded or failed for good. */
  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  next_attempt_at: string | null;
  created_at: string;
}

export class WebhookDeliveryPageDto {
  pagination: OffsetPaginationDto;
  @ApiProperty({ type: [WebhookDeliveryDto] })
  data: WebhookDeliveryDto[];
}
