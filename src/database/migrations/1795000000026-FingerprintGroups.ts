import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `tokens.fingerprint_groups`: for a token made by a caller the card enumeration guard did not count (a
 * public key, an import key without token:read), the groups (HMACs of the first 6 and last 4 digits of
 * the card numbers its fingerprint input holds, under the tenant's fingerprint key) its fingerprint has
 * still to be counted in before a read shows it; null once counted, or when it holds no card number.
 * Tokens made before this column are null: their fingerprints were already readable without a count.
 */
export class FingerprintGroups1795000000026 implements MigrationInterface {
  name = 'FingerprintGroups1795000000026';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tokens ADD COLUMN fingerprint_groups bytea[]`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tokens DROP COLUMN fingerprint_groups`);
  }
}
