import { hmac, type TenantKeys } from '../../../common/crypto/tenant-keys.service';
import { sealCvc, sealData } from '../data/seal-data';
import type { NewTokens, TokenRow } from '../tokens.repository';
import type { ParsedElement } from './tokenize-request';

/** How long a card's CVC (or a network token's cryptogram) is kept at most: an hour. */
export const CVC_RETENTION_MS = 60 * 60 * 1000;

/**
 * What a create writes for its new tokens: each token sealed under the tenant's last data key
 * generation, its search index digests, and the one secret a token keeps apart for an hour (a card's
 * CVC, or a network token's cryptogram), sealed too.
 */
export function sealedRows(
  keys: TenantKeys,
  fresh: { row: TokenRow; element: ParsedElement }[],
  now: Date,
): NewTokens {
  return {
    tokens: fresh.map(({ row, element }) => ({
      ...row,
      data: sealData(keys, row, element.validated.data),
      data_key: keys.data.generation,
    })),
    digests: fresh.flatMap(({ row, element }) =>
      [...new Set(element.indexValues)].map((value) => ({
        tenantId: row.tenant_id,
        tokenId: row.id,
        digest: hmac(keys.searchIndex, value),
      })),
    ),
    cvcs: fresh.flatMap(({ row, element }) => {
      const secret = element.validated.cvc ?? element.validated.cryptogram;
      return secret
        ? [
            {
              tenantId: row.tenant_id,
              tokenId: row.id,
              cvc: sealCvc(keys, row, secret),
              dataKey: keys.data.generation,
              expiresAt: new Date(now.getTime() + CVC_RETENTION_MS),
            },
          ]
        : [];
    }),
  };
}
