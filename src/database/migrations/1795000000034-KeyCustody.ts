import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Who holds each master key version: `provider` (`env`: ENCRYPTION_KEYS; `split`: shares held by
 * custodians, of which `threshold` out of `shares` open it). Versions recorded before (all of them
 * ENCRYPTION_KEYS or the embedded key file) are `env`. Neither a key nor a share is ever stored: the
 * check value already recorded tells whether a key is the one the version was first used with.
 */
export class KeyCustody1795000000034 implements MigrationInterface {
  name = 'KeyCustody1795000000034';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE master_key_checks ADD COLUMN provider varchar(10) NOT NULL DEFAULT 'env'`);
    await q.query(`ALTER TABLE master_key_checks ADD COLUMN threshold integer`);
    await q.query(`ALTER TABLE master_key_checks ADD COLUMN shares integer`);
    await q.query(`
      ALTER TABLE master_key_checks ADD CONSTRAINT master_key_checks_split_check CHECK (
        (provider = 'split') = (threshold IS NOT NULL AND shares IS NOT NULL)
        AND (threshold IS NULL OR (threshold >= 2 AND threshold <= shares AND shares <= 16))
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE master_key_checks DROP CONSTRAINT master_key_checks_split_check`);
    await q.query(`ALTER TABLE master_key_checks DROP COLUMN shares`);
    await q.query(`ALTER TABLE master_key_checks DROP COLUMN threshold`);
    await q.query(`ALTER TABLE master_key_checks DROP COLUMN provider`);
  }
}
