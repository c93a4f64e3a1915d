import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Token type `network_token` (docs/wallets.md): audit rows of such tokens record it in `token_type`,
 * which was sized for `token`, `card` and `bank`. Widening a varchar rewrites nothing in PostgreSQL.
 * A network token's cryptogram lives in `token_cvcs` as a card's CVC does (sealed, an hour at most).
 */
export class NetworkTokens1795000000036 implements MigrationInterface {
  name = 'NetworkTokens1795000000036';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE audit_logs ALTER COLUMN token_type TYPE varchar(16)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM token_cvcs c USING tokens t
      WHERE t.tenant_id = c.tenant_id AND t.id = c.token_id AND t.type = 'network_token'`);
    await q.query(`ALTER TABLE audit_logs ALTER COLUMN token_type TYPE varchar(10)`);
  }
}
