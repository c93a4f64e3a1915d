import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One row per tenant and card group the card enumeration guard has counted in: the group's `version`,
 * taken from a sequence each time a request counts numbers in it. A tokenize reads the versions with the
 * counts and writes its tokens only where the versions are still those it read (one statement, no lock
 * held between); a request that counts under a lock bumps them first. A sequence, not a counter per row:
 * a row deleted by the retention job and made again never takes a version a request may have read.
 */
export class CardEnumerationGroups1795000000033 implements MigrationInterface {
  name = 'CardEnumerationGroups1795000000033';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE SEQUENCE card_enumeration_versions`);
    await q.query(`
      CREATE TABLE card_enumeration_groups (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        group_digest bytea NOT NULL,
        version bigint NOT NULL,
        counted_at timestamptz NOT NULL,
        CONSTRAINT card_enumeration_groups_pkey PRIMARY KEY (tenant_id, group_digest)
      )`);
    await q.query(`CREATE INDEX card_enumeration_groups_counted_idx ON card_enumeration_groups (counted_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE card_enumeration_groups`);
    await q.query(`DROP SEQUENCE card_enumeration_versions`);
  }
}
