import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Card enrichments: the BIN of a card token, kept at tokenize (the first 6 or 8
 * digits, which PCI DSS allows shown with the last four). Tokens made before have none: their objects
 * carry no `enrichments`.
 */
export class CardEnrichments1795000000018 implements MigrationInterface {
  name = 'CardEnrichments1795000000018';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tokens ADD COLUMN card_bin varchar(8)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tokens DROP COLUMN card_bin`);
  }
}
