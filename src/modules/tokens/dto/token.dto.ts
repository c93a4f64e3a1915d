import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
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

/** What a card token shows of its card beyond the mask: never more of the number than BIN and last four. */
export class CardDetailsDto {
  /** The first 6 digits, whatever the scheme (never 8, which with the last four narrows the number too far). @example "424242" */
  bin: string;
  /** @example "4242" */
  last4: string;
  /** The scheme (`visa`, `mastercard`, `american-express`, `discover`, ...). @example "visa" */
  brand?: string;
  /** Not known to this service (no BIN table): absent. */
  funding?: string;
  /** Not known to this service (no BIN table): absent. */
  issuer?: string;
}

export class TokenEnrichmentsDto {
  card_details: CardDetailsDto;
}

/** A token. Its data is returned in clear only when read through a reveal rule. */
@ApiExtraModels(TokenMaskDto)
export class TokenObjectDto {
  /** The id given at tokenize (1 to 400 letters, digits, `_` and `-`; unique in the tenant), or a uuid. */
  id: string;
  tenant_id: string;
  @ApiProperty({ enum: ['token', 'card', 'bank'], type: 'string' })
  type: string;
  /** Cards and banks, when the token is the whole response. */
  @ApiPropertyOptional({ type: TokenMaskDto })
  mask?: TokenMaskDto;
  /**
   * Cards and banks inside a composite tokenize response: the same masked content as `mask`. A token
   * read through a `reveal` rule (get, list, search) carries its data in clear here instead of `mask`:
   * a card's `{number, expiration_month, expiration_year}` (never the CVC), a bank's
   * `{routing_number, account_number}`, a `token`'s JSON value.
   */
  @ApiPropertyOptional({
    oneOf: [
      { $ref: getSchemaPath(TokenMaskDto) },
      { type: 'object', additionalProperties: true },
      { type: 'array', items: {} },
      { type: 'string' },
      { type: 'number' },
      { type: 'boolean' },
    ],
  })
  data?: unknown;
  /** Card tokens (but through a `redact` rule): the card's BIN, last four digits and scheme. */
  enrichments?: TokenEnrichmentsDto;
  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  metadata?: Record<string, string>;
  search_indexes?: string[];
  /**
   * Only for a caller that may read the token (`token:read`, rules-aware): absent from a tokenize,
   * create or PATCH answer to a public key, or to a key or session without `token:read` on it, and from
   * search results it may not read. A card number's fingerprint is shown only once counted by the card
   * enumeration guard: a token a public key made is counted at its first read, and shown without it past
   * the limit.
   */
  fingerprint?: string;
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

/**
 * One value of a tokenize response, where the request had: a string, the id of the `token` token made of
 * it; a token request element, the token object; an object or an array, the same of its members.
 */
export const TOKENIZED_VALUE: SchemaObject = {
  description:
    'Where the request had a string: the id of the `token` token made of it; a token request element: the ' +
    'token object; an object or an array: the same for each of its members.',
  anyOf: [
    { type: 'string' },
    { $ref: getSchemaPath(TokenObjectDto) },
    { type: 'object', additionalProperties: { $ref: '#/components/schemas/TokenizedValue' } },
    { type: 'array', items: { $ref: '#/components/schemas/TokenizedValue' } },
  ],
};
