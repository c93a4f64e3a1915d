import {
  DEFAULT_PAYMENT_SOURCE,
  PAYMENT_SOURCES,
  type PaymentSource,
} from '../processors/payment-initiation';
import { ATTEMPT_STATUSES, type AttemptStatus } from './entities/attempt.entity';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
} from 'class-validator';
import {
  OffsetPaginationDto,
  OffsetPaginationQueryDto,
} from '../../../common/pagination/offset-pagination.dto';
import { TOKEN_ID_PATTERN } from '../../tokens/data/token-id';

export const MAX_AMOUNT = 99_999_999;
export const INTENTS = ['authorize', 'capture'] as const;
export const TRANSACTION_STATUSES = [
  'processing',
  'buyer_approval_pending',
  'authorization_succeeded',
  'authorization_failed',
  'authorization_declined',
  'capture_pending',
  'capture_succeeded',
  'authorization_void_pending',
  'authorization_voided',
] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

export class CreateTransactionDto {
  /** In the currency's smallest unit; 0 only where the connection supports zero-amount authorization. */
  @IsInt()
  @Min(0)
  @Max(MAX_AMOUNT)
  amount: number;

  /**
   * The connection to pay through, alone (no routing rules, no failover). Absent: the first matching
   * `route-transaction` rule chooses the connections to try, in order.
   */
  @IsOptional()
  @IsUUID()
  connection_id?: string;

  /** ISO 4217, one of the connection's accepted currencies. @example "USD" */
  @IsString()
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be a 3-letter ISO 4217 code in upper case' })
  currency: string;

  /**
   * A card token of the tenant, by id; `token:use` is checked on it through the caller's rules. Without
   * it, `buyer_id` names the buyer whose first stored card is charged.
   */
  @ApiPropertyOptional({ pattern: TOKEN_ID_PATTERN.source })
  @IsOptional()
  @IsString()
  @Matches(TOKEN_ID_PATTERN, { message: 'token must be a token id: 1 to 400 letters, digits, _ and -' })
  token?: string;

  /**
   * The buyer the payment is for (needs `orchestration:buyers:read`). Without `token`, its first stored
   * card (most recently used) is charged and `payment_source` defaults to `card_on_file`; with `token`,
   * the token must be stored for the buyer unless `store` is true.
   */
  @IsOptional()
  @IsUUID()
  buyer_id?: string;

  /** Store the card for `buyer_id` once the authorization succeeds (no duplicate of a card it has). */
  @IsOptional()
  @IsBoolean()
  store?: boolean;

  /** ISO 3166-1 alpha-2, one of the connection's accepted countries. @example "US" */
  @IsOptional()
  @IsString()
  @Matches(/^[A-Z]{2}$/, { message: 'country must be a 2-letter ISO 3166-1 code in upper case' })
  country?: string;

  @IsOptional()
  @IsString()
  @MaxLength(200)
  external_identifier?: string;

  /** `authorize` (default; capture later) or `capture` (at once). */
  @ApiPropertyOptional({ enum: INTENTS, type: 'string', default: 'authorize' })
  @IsOptional()
  @IsIn(INTENTS)
  intent?: (typeof INTENTS)[number];

  @IsOptional()
  @IsBoolean()
  is_subsequent_payment?: boolean;

  @IsOptional()
  @IsBoolean()
  merchant_initiated?: boolean;

  /** At most 20 string values. */
  @IsOptional()
  @IsObject()
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ enum: PAYMENT_SOURCES, type: 'string', default: DEFAULT_PAYMENT_SOURCE })
  @IsOptional()
  @IsIn(PAYMENT_SOURCES)
  payment_source?: PaymentSource;

  /** Required with `is_subsequent_payment`. */
  @IsOptional()
  @IsString()
  @Length(1, 100)
  previous_scheme_transaction_id?: string;

  /** A 3-D Secure session completed elsewhere: its id, or an object with an `id`. */
  @IsOptional()
  @ApiPropertyOptional({
    oneOf: [{ type: 'string' }, { type: 'object', properties: { id: { type: 'string' } } }],
  })
  three_d_session_id?: unknown;

  /**
   * A 3-D Secure authentication the buyer passed elsewhere, forwarded to the vendor (formulas with
   * `three_d_secure_pass_through` only): `{version, eci, cavv, directory_response?,
   * authentication_response?, ds_transaction_id?}`. Never stored, never logged.
   */
  @IsOptional()
  @ApiPropertyOptional({
    type: 'object',
    properties: {
      version: { type: 'string', example: '2.2.0' },
      eci: { type: 'string', example: '05' },
      cavv: { type: 'string' },
      directory_response: { type: 'string', example: 'Y' },
      authentication_response: { type: 'string', example: 'Y' },
      ds_transaction_id: { type: 'string', format: 'uuid' },
    },
    required: ['version', 'eci', 'cavv'],
  })
  three_d_secure_data?: unknown;
}

export class CaptureTransactionDto {
  /** Defaults to the whole authorized amount; less needs the `partial_capture` feature. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_AMOUNT)
  amount?: number;
}

export class CreateRefundDto {
  /** Defaults to what is left to refund; less needs the `partial_refunds` feature. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_AMOUNT)
  amount?: number;
}

export class ListTransactionsQueryDto extends OffsetPaginationQueryDto {
  @ApiPropertyOptional({ enum: TRANSACTION_STATUSES, type: 'string' })
  @IsOptional()
  @IsIn(TRANSACTION_STATUSES)
  status?: TransactionStatus;

  @IsOptional()
  @IsUUID()
  connection_id?: string;

  @IsOptional()
  @IsString()
  @MaxLength(200)
  external_identifier?: string;

  /** Only the transactions made for this buyer (a deleted buyer's too). */
  @IsOptional()
  @IsUUID()
  buyer_id?: string;
}

/** The buyer a transaction was made for, as it was then. */
export class TransactionBuyerDto {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ type: String, nullable: true })
  external_identifier: string | null;

  @ApiProperty({ type: String, nullable: true })
  display_name: string | null;
}

export class PaymentMethodDto {
  @ApiProperty({ enum: ['payment-method'] })
  type: 'payment-method';
  @ApiProperty({ enum: ['card', 'network_token'] })
  method: 'card' | 'network_token';
  /** A network token's origin: `apple_pay`, `google_pay` or `merchant` (absent for a card). */
  @ApiPropertyOptional({ enum: ['apple_pay', 'google_pay', 'merchant'] })
  source?: 'apple_pay' | 'google_pay' | 'merchant';
  /** The card or network token. */
  id: string;
  /** @example "visa" */
  scheme: string | null;
  /** The card's last four digits. @example "4242" */
  label: string;
  /** @example "12/30" */
  expiration_date: string;
  /**
   * The card token's fingerprint, only to a caller that may read that token now (`token:read` through its
   * rules); absent for any other caller, and once the token is deleted or expired. A card a public key
   * tokenized is counted by the card enumeration guard at its first such read, and absent past its limit.
   */
  fingerprint?: string;
  /** The buyer approval page, while the status is `buyer_approval_pending`. */
  approval_url: string | null;
}

export class ConnectionSummaryDto {
  id: string;
  connection_formula_id: string;
  display_name: string;
  method: string;
}

export class ThreeDSecureDto {
  version: string;
  @ApiProperty({ enum: ['setup_error', 'error', 'declined', 'cancelled', 'complete'] })
  status: string;
  @ApiProperty({ enum: ['challenge', 'frictionless'] })
  method: string;
  error_data?: {
    code: string;
    description: string;
    detail: Record<string, unknown>;
    component: Record<string, unknown>;
  };
}

export class TransactionDto {
  @ApiProperty({ enum: ['transaction'] })
  type: 'transaction';
  id: string;
  /** The id as a base62 integer, sent to vendors as the merchant reference. */
  reconciliation_id: string;
  @ApiProperty({ enum: TRANSACTION_STATUSES })
  status: TransactionStatus;
  @ApiProperty({ enum: INTENTS })
  intent: string;
  @ApiProperty({ enum: ['pending', 'succeeded', 'failed'] })
  intent_outcome: 'pending' | 'succeeded' | 'failed';
  amount: number;
  currency: string;
  authorized_amount: number;
  captured_amount: number;
  refunded_amount: number;
  country: string | null;
  external_identifier: string | null;
  metadata: Record<string, string> | null;
  @ApiProperty({ enum: PAYMENT_SOURCES })
  payment_source: string;
  merchant_initiated: boolean;
  is_subsequent_payment: boolean;
  previous_scheme_transaction_id: string | null;
  payment_method: PaymentMethodDto;
  /** The buyer it was made for, as the buyer was then; null without one. */
  @ApiProperty({ type: TransactionBuyerDto, nullable: true })
  buyer: TransactionBuyerDto | null;
  /** The connection of the last attempt; null when a rule declined the transaction before any. */
  @ApiProperty({ type: ConnectionSummaryDto, nullable: true })
  connection: ConnectionSummaryDto | null;
  scheme_transaction_id: string | null;
  connection_transaction_id: string | null;
  error_code: string | null;
  auth_response_code: string | null;
  @ApiProperty({ enum: ['match', 'no_match', 'unavailable', 'not_provided'], nullable: true })
  cvv_response_code: string | null;
  three_d_secure: ThreeDSecureDto | null;
  authorized_at: string | null;
  captured_at: string | null;
  voided_at: string | null;
  approval_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export class TransactionPageDto {
  pagination: OffsetPaginationDto;
  @ApiProperty({ type: [TransactionDto] })
  data: TransactionDto[];
}

/** One try of the transaction's authorization at one connection (docs/routing.md). */
export class AttemptDto {
  @ApiProperty({ enum: ['attempt'] })
  type: 'attempt';
  id: string;
  /** 1 to 5, in the order they were made. */
  number: number;
  connection: ConnectionSummaryDto;
  /** `processing`: in flight, or its outcome is unknown (settlement resolves it). */
  @ApiProperty({ enum: ATTEMPT_STATUSES })
  status: AttemptStatus;
  error_code: string | null;
  auth_response_code: string | null;
  connection_transaction_id: string | null;
  created_at: string;
  updated_at: string;
}

export class RefundDto {
  @ApiProperty({ enum: ['refund'] })
  type: 'refund';
  id: string;
  transaction_id: string;
  amount: number;
  currency: string;
  @ApiProperty({ enum: ['processing', 'succeeded', 'failed'] })
  status: 'processing' | 'succeeded' | 'failed';
  created_at: string;
}

export class RefundPageDto {
  pagination: OffsetPaginationDto;
  @ApiProperty({ type: [RefundDto] })
  data: RefundDto[];
}
