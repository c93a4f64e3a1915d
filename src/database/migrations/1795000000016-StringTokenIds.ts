import { MigrationInterface, QueryRunner } from 'typeorm';

/** A column that holds a token id. */
interface TokenIdColumn {
  table: string;
  column: string;
}

/** A foreign key onto `tokens (tenant_id, id)`; dropped while the types differ, then made again as it was. */
interface TokenForeignKey {
  table: string;
  name: string;
}

const COLUMNS: TokenIdColumn[] = [
  { table: 'tokens', column: 'id' },
  { table: 'token_search_indexes', column: 'token_id' },
  { table: 'token_cvcs', column: 'token_id' },
  // No foreign key: a transaction keeps naming its token after the token is deleted.
  { table: 'transactions', column: 'token_id' },
];

/** A uuid as Postgres writes it (lower case). */
const UUID_TEXT = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const FOREIGN_KEYS: TokenForeignKey[] = [
  { table: 'token_search_indexes', name: 'token_search_indexes_token_id_fkey' },
  { table: 'token_cvcs', name: 'token_cvcs_token_id_fkey' },
];

/**
 * Token ids become strings: a client may give any id of 1 to 400 letters, digits,
 * `_` and `-`, unique within its tenant; generated ids stay uuids. Every column holding a token id turns
 * from uuid into `varchar(400) COLLATE "C"`: byte order, in which the existing ids (lower-case uuids)
 * sort as they did as uuids, so keyset pages keep their order. Existing values keep their text form.
 * Primary keys and indexes keep their names and columns (Postgres rebuilds them with the new type); the
 * two foreign keys onto `tokens` are dropped for the change and made again under the same names. The
 * audit log's `entity_id` (text) and the webhook tables' `entity_id` (varchar(400)) already take any id.
 * Each table is rewritten under its lock, in the one transaction that runs pending migrations: on large
 * tables that is a pause at start-up (docs/scaling.md).
 */
export class StringTokenIds1795000000016 implements MigrationInterface {
  name = 'StringTokenIds1795000000016';

  async up(q: QueryRunner): Promise<void> {
    for (const fk of FOREIGN_KEYS) await q.query(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${fk.name}`);
    for (const { table, column } of COLUMNS)
      await q.query(
        `ALTER TABLE ${table} ALTER COLUMN ${column} TYPE varchar(400) COLLATE "C" USING ${column}::text`,
      );
    for (const fk of FOREIGN_KEYS) await addForeignKey(q, fk);
  }

  /** Back to uuids; refused while a token or a transaction names a token id that is not a uuid. */
  async down(q: QueryRunner): Promise<void> {
    for (const { table, column } of [COLUMNS[0], COLUMNS[3]]) {
      const [{ count }] = (await q.query(
        `SELECT count(*)::int AS count FROM ${table} WHERE ${column} !~ '^${UUID_TEXT}$'`,
      )) as { count: number }[];
      if (count > 0)
        throw new Error(
          `${count} row(s) of ${table} hold a token id that is not a uuid; delete them before reverting ${this.name}`,
        );
    }
    for (const fk of FOREIGN_KEYS) await q.query(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${fk.name}`);
    for (const { table, column } of COLUMNS)
      await q.query(`ALTER TABLE ${table} ALTER COLUMN ${column} TYPE uuid USING ${column}::uuid`);
    for (const fk of FOREIGN_KEYS) await addForeignKey(q, fk);
  }
}

/** As migration 10 made them: `(tenant_id, token_id)` onto the token's key, deleted with the token. */
async function addForeignKey(q: QueryRunner, fk: TokenForeignKey): Promise<void> {
  await q.query(
    `ALTER TABLE ${fk.table} ADD CONSTRAINT ${fk.name} FOREIGN KEY (tenant_id, token_id)
       REFERENCES tokens (tenant_id, id) ON DELETE CASCADE`,
  );
}
