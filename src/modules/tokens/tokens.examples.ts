import type { NewTokens } from './token-rows';

/** The values the SQL snapshots of `TokensRepository` render its statements with (test/sql). */
export const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
export const EXAMPLE_TOKEN = '00000000-0000-4000-8000-000000000002';
export const EXAMPLE_APPLICATION = '00000000-0000-4000-8000-000000000003';
export const EXAMPLE_NOW = new Date('2026-01-01T00:00:00Z');
export const EXAMPLE_NEW_TOKENS: NewTokens = {
  tokens: [
    {
      id: EXAMPLE_TOKEN,
      tenant_id: EXAMPLE_TENANT,
      type: 'card',
      data: Buffer.from('sealed'),
      data_key: 0,
      mask: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 },
      card_brand: 'visa',
      card_bin: '424242',
      fingerprint: 'fp1',
      fingerprint_groups: null,
      fingerprint_expression: '{{ data.number }}',
      metadata: null,
      search_indexes: ['{{ data.number | last4 }}'],
      containers: ['/pci/high/'],
      expires_at: null,
      created_by: EXAMPLE_APPLICATION,
      created_at: EXAMPLE_NOW,
      modified_by: null,
      modified_at: null,
    },
  ],
  digests: [{ tenantId: EXAMPLE_TENANT, tokenId: EXAMPLE_TOKEN, digest: Buffer.from('digest') }],
  cvcs: [
    {
      tenantId: EXAMPLE_TENANT,
      tokenId: EXAMPLE_TOKEN,
      cvc: Buffer.from('sealed cvc'),
      dataKey: 0,
      expiresAt: new Date('2026-01-01T01:00:00Z'),
    },
  ],
};
