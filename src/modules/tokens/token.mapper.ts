import type { RuleTransform } from '../../common/auth/access-rule';
import type { TokenRow } from './tokens.repository';

export type TokenDto = Record<string, unknown>;

export interface CursorTokenPage {
  pagination: { page_size: number; next?: string };
  data: TokenDto[];
}

/** The token object (contract section 3): `mask` alone, `data` (masked) inside a composite response. */
export function tokenDto(
  row: TokenRow,
  options: { composite?: boolean; transform?: RuleTransform } = {},
): TokenDto {
  const out: TokenDto = { id: row.id, tenant_id: row.tenant_id, type: row.type };
  if (row.mask && (options.transform ?? 'mask') === 'mask')
    out[options.composite ? 'data' : 'mask'] = row.mask;
  if (row.metadata) out.metadata = row.metadata;
  if (row.search_indexes) out.search_indexes = row.search_indexes;
  out.fingerprint = row.fingerprint;
  out.fingerprint_expression = row.fingerprint_expression;
  out.containers = row.containers;
  if (row.expires_at) out.expires_at = row.expires_at.toISOString();
  out.created_by = row.created_by;
  out.created_at = row.created_at.toISOString();
  if (row.modified_by) out.modified_by = row.modified_by;
  if (row.modified_at) out.modified_at = row.modified_at.toISOString();
  return out;
}
