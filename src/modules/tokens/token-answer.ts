import type { RuleTransform } from '../../common/auth/access-rule';
import type { EventType, OutboxEvent } from '../../common/events/event-outbox';
import type { CardDetailsDto, TokenMaskDto, TokenObjectDto } from './dto/token.dto';
import type { TokenRow } from './tokens.repository';

/** The token as answered: the class the OpenAPI document describes, so the compiler checks answers against it. */
export type TokenDto = TokenObjectDto;

/** What a join of another module shows of a token's card (a buyer's stored cards), as the tokens table holds it. */
export type TokenCardColumns = Pick<TokenRow, 'card_brand' | 'mask'>;

/** The digits of a BIN any answer or event shows. */
export const SHOWN_BIN_DIGITS = 6;

export interface CursorTokenPage {
  pagination: { page_size: number; next?: string };
  data: TokenDto[];
}

/**
 * The token object: `mask` alone, `data` (masked) inside a composite response;
 * nothing of the data through a `redact` rule. `revealed` (a read through a `reveal` rule)
 * puts the clear data in `data` instead of the mask; a `reveal` transform without it (the answer to a
 * create or a PATCH) shows the mask. `fingerprint` only for a caller that may read the token
 * (`readable`): a fingerprint answered for a number the caller chose would tell whether it is a stored
 * card's (the card-number oracle of docs/reliability.md's abuse table).
 */
export function tokenDto(
  row: TokenRow,
  options: {
    composite?: boolean;
    transform?: RuleTransform;
    revealed?: { data: unknown };
    readable?: boolean;
  } = {},
): TokenDto {
  const mask = row.mask as TokenMaskDto | null;
  const enrichments = options.transform === 'redact' ? undefined : cardEnrichments(row);
  const out: TokenDto = {
    id: row.id,
    tenant_id: row.tenant_id,
    type: row.type,
    ...(options.revealed
      ? { data: options.revealed.data }
      : mask && options.transform !== 'redact'
        ? options.composite
          ? { data: mask }
          : { mask }
        : {}),
    ...(enrichments ? { enrichments } : {}),
    ...(row.metadata ? { metadata: row.metadata } : {}),
    ...(row.search_indexes ? { search_indexes: row.search_indexes } : {}),
    ...(options.readable ? { fingerprint: row.fingerprint } : {}),
    fingerprint_expression: row.fingerprint_expression,
    containers: row.containers,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    ...(row.modified_by ? { modified_by: row.modified_by } : {}),
    ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
  };
  return out;
}

/**
 * `enrichments.card_details` of a card token: the first 6 digits of the BIN kept
 * at tokenize (it keeps up to 8; 8 with the last four would leave a 16-digit number 4 unknown digits,
 * about 1,000 candidates), the last four of the mask, the brand; nothing for tokens made before BINs were kept. No funding or issuer:
 * the service has no BIN table to know them from.
 */
function cardEnrichments(row: TokenRow): { card_details: CardDetailsDto } | undefined {
  const number = row.mask?.number;
  if ((row.type !== 'card' && row.type !== 'network_token') || !row.card_bin || typeof number !== 'string')
    return undefined;
  return {
    card_details: {
      bin: row.card_bin.slice(0, SHOWN_BIN_DIGITS),
      last4: number.slice(-4),
      ...(row.card_brand ? { brand: row.card_brand } : {}),
    },
  };
}

/**
 * A `token:*` event: the token as GET /tokens/{id} shows it through flat
 * permissions, its `mask` and never its data, whoever made the change and through whatever rule.
 */
export function tokenEvent(type: EventType & `token:${string}`, row: TokenRow): OutboxEvent {
  return {
    tenantId: row.tenant_id,
    type,
    entityId: row.id,
    data: tokenDto(row, { transform: 'mask', readable: true }),
  };
}
