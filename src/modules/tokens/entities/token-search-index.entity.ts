import { Entity, PrimaryColumn } from 'typeorm';

/** One search index of a token: the HMAC digest of an index expression's value, never the value. */
@Entity({ name: 'token_search_indexes' })
export class TokenSearchIndexEntity {
  @PrimaryColumn({ name: 'token_id', type: 'varchar', length: 400, collation: 'C' })
  tokenId: string;

  /** First of the primary key, as on every tenant-scoped table (docs/scaling.md). */
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ type: 'bytea' })
  digest: Buffer;
}
