import { MigrationInterface, QueryRunner } from 'typeorm';

const CHILDREN = [
  { table: 'token_cvcs', fk: 'token_cvcs_token_id_fkey' },
  { table: 'token_search_indexes', fk: 'token_search_indexes_token_id_fkey' },
];

/**
 * A token's CVC and search index rows go with it through a trigger instead of a foreign key.
 *
 * A foreign key checks every inserted child with a query of its own, planned once per connection and kept:
 * planned while `tokens` was small (a fresh deployment), that plan scans the whole table, and every
 * tokenize with a CVC then costs more with each token stored (measured: a 100-card tokenize slowed
 * threefold within a minute, 95% of its time in that check). The children are only ever written in the
 * statement that writes their token, joined to the rows it inserted, so the check guards nothing the
 * write does not already; what the key also did, deleting them with their token, a statement trigger
 * does here, for every way a token is deleted (the API, expiry, a tenant's deletion).
 */
export class TokenChildrenCascade1795000000028 implements MigrationInterface {
  name = 'TokenChildrenCascade1795000000028';

  async up(q: QueryRunner): Promise<void> {
    for (const { table, fk } of CHILDREN) await q.query(`ALTER TABLE ${table} DROP CONSTRAINT ${fk}`);
    await q.query(`
      CREATE FUNCTION tokens_delete_children() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM token_cvcs AS c USING gone AS g WHERE c.tenant_id = g.tenant_id AND c.token_id = g.id;
        DELETE FROM token_search_indexes AS s USING gone AS g WHERE s.tenant_id = g.tenant_id AND s.token_id = g.id;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER tokens_delete_children AFTER DELETE ON tokens
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION tokens_delete_children()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER tokens_delete_children ON tokens`);
    await q.query(`DROP FUNCTION tokens_delete_children()`);
    for (const { table, fk } of CHILDREN)
      await q.query(
        `ALTER TABLE ${table} ADD CONSTRAINT ${fk} FOREIGN KEY (tenant_id, token_id)
           REFERENCES tokens (tenant_id, id) ON DELETE CASCADE`,
      );
  }
}
