import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `refuse_write(piece)`: raises SQLSTATE `VT001` with the piece's number as its message. A one-statement
 * write (`WriteBatch`) calls it when one of its pieces finds a condition that must undo the whole
 * statement (an idempotency claim another request took over), since plain SQL has no way to raise.
 */
export class WriteRefusals1795000000021 implements MigrationInterface {
  name = 'WriteRefusals1795000000021';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION refuse_write(piece text) RETURNS int LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION USING ERRCODE = 'VT001', MESSAGE = piece;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION refuse_write(text)`);
  }
}
