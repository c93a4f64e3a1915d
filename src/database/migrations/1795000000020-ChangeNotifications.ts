import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Change notifications for what instances keep in memory (see ChangeNotifications): a change of
 * `api_keys` or `applications` (a key revoked or rotated, permissions or rules changed, an application
 * or a tenant deleted: cascades fire the triggers too) announces itself on `vault_changes` (payload:
 * the table) when its transaction commits.
 */
export class ChangeNotifications1795000000020 implements MigrationInterface {
  name = 'ChangeNotifications1795000000020';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION notify_changes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('vault_changes', TG_TABLE_NAME);
        RETURN NULL;
      END $$`);
    for (const table of ['api_keys', 'applications'])
      await q.query(`
        CREATE TRIGGER ${table}_changes AFTER UPDATE OR DELETE OR TRUNCATE ON ${table}
          FOR EACH STATEMENT EXECUTE FUNCTION notify_changes()`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['api_keys', 'applications'])
      await q.query(`DROP TRIGGER ${table}_changes ON ${table}`);
    await q.query(`DROP FUNCTION notify_changes()`);
  }
}
