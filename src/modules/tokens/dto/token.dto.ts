import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { OffsetPaginationDto } from '../../../common/pagination/offset-pagination.dto';

/** The masked form of a card or bank: never the clear number. */
export class TokenMaskDto {
  /** @example "XXXXXXXXXXXX4242" */
  number?: string;
  expiration_month?: number;
  expiration_year?: number;
  routing_number?: string;
  /** @example "XXXXX6789" */
  account_number?: string;
}

/** A token (contract section 3). Its data is never returned in the clear. */
export class TokenObjectDto {
  id: string;
  tenant_id: string;
  @ApiProperty({ enum: ['token', 'card', 'bank'], type: 'string' })
  type: string;
  /** Cards and banks, when the token is the whole response. */
  @ApiPropertyOptional({ type: TokenMaskDto })
  mask?: TokenMaskDto;
  /** Cards and banks inside a composite tokenize response: the same masked content as `mask`. */
  @ApiPropertyOptional({ type: TokenMaskDto })
  data?: TokenMaskDto;
  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  metadata?: Record<string, string>;
  search_indexes?: string[];
  fingerprint: string;
  fingerprint_expression: string;
  containers: string[];
  expires_at?: string;
  created_by: string | null;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

export class TokenPageDto {
  pagination: OffsetPaginationDto;
  @ApiProperty({ type: [TokenObjectDto] })
  data: TokenObjectDto[];
}

export class TokenCursorPaginationDto {
  page_size: number;
  /** Cursor of the next page (pass it as `start`); absent on the last page. */
  next?: string;
}

export class TokenCursorPageDto {
  pagination: TokenCursorPaginationDto;
  @ApiProperty({ type: [TokenObjectDto] })
  data: TokenObjectDto[];
}
