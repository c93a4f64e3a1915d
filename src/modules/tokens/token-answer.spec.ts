import { tokenDto } from './token-answer';
import type { TokenRow } from './tokens.repository';

const row = (changes: Partial<TokenRow> = {}): TokenRow => ({
  id: 'tok_1',
  tenant_id: 't',
  type: 'card',
  mask: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2030 },
  card_brand: 'visa',
  card_bin: '42424242',
  fingerprint: 'fp',
  fingerprint_groups: null,
  fingerprint_expression: '{{ data.number }}',
  metadata: null,
  search_indexes: null,
  containers: ['/pci/high/'],
  expires_at: null,
  created_by: null,
  created_at: new Date('2026-11-24T00:00:00Z'),
  modified_by: null,
  modified_at: null,
  ...changes,
});

describe('token objects: enrichments', () => {
  it('a card with a kept BIN shows its first 6 digits, the last four and the brand', () => {
    expect(tokenDto(row()).enrichments).toEqual({
      card_details: { bin: '424242', last4: '4242', brand: 'visa' },
    });
    expect(tokenDto(row({ card_bin: '378282', card_brand: 'american-express' })).enrichments).toEqual({
      card_details: { bin: '378282', last4: '4242', brand: 'american-express' },
    });
  });

  it('none through a redact rule, for cards made before BINs were kept, or for other types', () => {
    expect(tokenDto(row(), { transform: 'redact' }).enrichments).toBeUndefined();
    expect(tokenDto(row({ card_bin: null })).enrichments).toBeUndefined();
    expect(
      tokenDto(row({ type: 'bank', card_bin: null, mask: { account_number: 'XXXX6789' } })).enrichments,
    ).toBeUndefined();
  });
});

describe('token objects: fingerprints', () => {
  it('only for a caller that may read the token', () => {
    expect(tokenDto(row())).not.toHaveProperty('fingerprint');
    expect(tokenDto(row(), { readable: false })).not.toHaveProperty('fingerprint');
    expect(tokenDto(row(), { readable: true }).fingerprint).toBe('fp');
  });
});
