import type { RowOf } from '../../database/table';
import type { TokenEntity } from './entities/token.entity';

/** A token as stored, without its sealed data (nor the generation of the data key that seals it). */
export type TokenRow = Omit<RowOf<TokenEntity>, 'data' | 'data_key'>;

/** A token with its data sealed (`aead.seal`), as written and as read for use or update. */
export type SealedToken = RowOf<TokenEntity>;

/** What a PATCH changes on a token. */
export type TokenChanges = Pick<
  TokenRow,
  | 'metadata'
  | 'search_indexes'
  | 'fingerprint_expression'
  | 'fingerprint'
  | 'fingerprint_groups'
  | 'expires_at'
  | 'modified_by'
  | 'modified_at'
>;

/** The HMAC digest of one search index value of a token. */
export interface SearchIndexDigest {
  tenantId: string;
  tokenId: string;
  digest: Buffer;
}

/** A card's CVC, sealed (under generation `dataKey` of the tenant's data key), and when it must be gone. */
export interface SealedCvc {
  tenantId: string;
  tokenId: string;
  cvc: Buffer;
  dataKey: number;
  expiresAt: Date;
}

/** The tokens a create request writes, with their search index digests and CVCs. */
export interface NewTokens {
  tokens: SealedToken[];
  digests: SearchIndexDigest[];
  cvcs: SealedCvc[];
}
