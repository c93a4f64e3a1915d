import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { SchedulerRegistry } from '@nestjs/schedule';
import { rowHash } from '../src/common/audit/audit-chain.service';
import { AuditCheckpointer } from '../src/common/audit/audit-checkpointer.service';
import { AuditVerifier } from '../src/common/audit/audit-verifier.service';
import { AuditTree1795000000027 } from '../src/database/migrations/1795000000027-AuditTree';
import { dataSourceOptions, runMigrations } from '../src/database/data-source';
import { MIGRATIONS } from '../src/database/migrations';
import { loadConfig } from '../src/config/load-config';
import { startApp, TestApp } from './support/app';
import { beforeMigration, MigrationUnderTest } from './support/migrations';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const independent = require('../examples/verify-audit/verify-audit');

const T = '0d000000-0000-4000-8000-000000000000';
const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second));
/** Six rows written before the tree: the first four sealed into the old chain, the last two not yet. */
const ROWS = [0, 1, 2, 3, 4, 5].map((i) => ({
  id: `0d000000-0000-4000-8000-00000000000${i}`,
  tenant_id: T,
  actor_id: null,
  actor_type: 'system',
  entity_type: 'tenant',
  entity_id: T,
  operation: 'update',
  message: `Old row ${i}`,
  // The chain's order is not the time order: row 2 was sealed before row 1.
  created_at: at([0, 2, 1, 3, 5, 4][i]),
  token_type: null,
}));
const SEALED = [ROWS[0], ROWS[2], ROWS[1], ROWS[3]];
const LEAF_ORDER = [...SEALED, ROWS[5], ROWS[4]];

/**
 * Migration 27 on a log written under the old hash chain: the sealed rows keep their chain (and verify as
 * before), every old row becomes a leaf (the sealed ones first, in chain order), and the trigger refuses
 * every UPDATE from then on.
 */
describe('migration AuditTree1795000000027', () => {
  let migration: MigrationUnderTest;
  let db: DataSource;
  let t: TestApp | undefined;

  beforeAll(async () => {
    migration = await beforeMigration(
      AuditTree1795000000027,
      'vault_test_audit_tree_migration',
      async (old) => {
        await old.query(`INSERT INTO tenants (id, name) VALUES ($1, 'old chain')`, [T]);
        for (const row of ROWS)
          await old.query(
            `INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
            [
              row.id,
              T,
              null,
              row.actor_type,
              row.entity_type,
              row.entity_id,
              row.operation,
              row.message,
              row.created_at,
            ],
          );
        // Sealed as the chain job did: each row's hash over its fields and the previous hash.
        let prev: Buffer = Buffer.alloc(32);
        for (const [i, row] of SEALED.entries()) {
          const [stored] = await old.query(
            `SELECT *, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_text
             FROM audit_logs WHERE id = $1`,
            [row.id],
          );
          const hash = rowHash(stored, i + 1, prev);
          await old.query('UPDATE audit_logs SET seq = $2, prev_hash = $3, hash = $4 WHERE id = $1', [
            row.id,
            i + 1,
            prev,
            hash,
          ]);
          prev = hash;
        }
        await old.query('INSERT INTO audit_chain_heads (tenant_id, seq, hash) VALUES ($1, 4, $2)', [T, prev]);
      },
    );
    db = migration.db;
    await runMigrations(db);
  });
  afterAll(async () => {
    await t?.close();
    await migration?.close();
  });

  it('gives the old rows their place: the sealed ones in chain order, then the rest', async () => {
    const rows: { id: string; written: string }[] = await db.query(
      'SELECT id, written::text FROM audit_logs WHERE tenant_id = $1 ORDER BY written, pos',
      [T],
    );
    expect(rows.map((r) => r.id)).toEqual(LEAF_ORDER.map((r) => r.id));
    expect(new Set(rows.map((r) => r.written))).toEqual(new Set(['0']));
    await expect(db.query(`UPDATE audit_logs SET message = 'x' WHERE id = $1`, [ROWS[5].id])).rejects.toThrow(
      /cannot be updated/,
    );
    await expect(db.query(`UPDATE audit_logs SET seq = 9 WHERE id = $1`, [ROWS[5].id])).rejects.toThrow(
      /cannot be updated/,
    );
  });

  it("appends them as the first leaves; the old chain and the tree both verify, the root is the independent verifier's", async () => {
    t = await startApp({ DATABASE_URL: migration.url, AUDIT_CHECKPOINT_SECONDS: '1' });
    const scheduler = t.app.get(SchedulerRegistry);
    for (const name of scheduler.getIntervals()) scheduler.deleteInterval(name);
    await t.app.get(AuditCheckpointer).run();

    const report = await t.app.get(AuditVerifier).verify({ tenant: T });
    expect(report.problems).toEqual([]);
    // 4 rows through the old chain and 6 through the tree.
    expect(report.rows_checked).toBe(10);
    const [checkpoint] = await db.query(
      'SELECT tree_size::int, root_hash, note FROM audit_checkpoints WHERE tenant_id = $1',
      [T],
    );
    expect(checkpoint.tree_size).toBe(6);
    const leaves = LEAF_ORDER.map((row) =>
      independent.logLeafHash({
        id: row.id,
        tenant_id: T,
        actor_id: null,
        actor_type: row.actor_type,
        entity_type: row.entity_type,
        entity_id: row.entity_id,
        operation: row.operation,
        message: row.message,
        created_at: row.created_at.toISOString(),
      }),
    );
    expect(Buffer.from(independent.rootFromLeaves(leaves)).equals(checkpoint.root_hash)).toBe(true);

    // Tampered with, an old row is reported by both.
    await db.transaction(async (m) => {
      await m.query('SET LOCAL session_replication_role = replica');
      await m.query(`UPDATE audit_logs SET message = 'Rewritten' WHERE id = $1`, [ROWS[2].id]);
    });
    const tampered = await t.app.get(AuditVerifier).verify({ tenant: T, checkpoint: checkpoint.note });
    expect(tampered.problems).toEqual(
      expect.arrayContaining([
        { tenant_id: T, seq: 2, id: ROWS[2].id, problem: 'altered' },
        { tenant_id: T, problem: 'leaf_altered', leaf_index: 1, id: ROWS[2].id },
        expect.objectContaining({ tenant_id: T, problem: 'kept_checkpoint_mismatch', leaf_index: 1 }),
      ]),
    );
  });

  it('down() takes the tree away and gives the chain its sealing back', async () => {
    await t?.close();
    t = undefined;
    // The service ran the later migrations too: undone first, through a source that knows them.
    const all = new DataSource({
      ...dataSourceOptions(loadConfig({ DATABASE_URL: migration.url })),
      migrations: MIGRATIONS,
    });
    await all.initialize();
    try {
      for (;;) {
        const [last]: { name: string }[] = await all.query(
          'SELECT name FROM migrations ORDER BY id DESC LIMIT 1',
        );
        await all.undoLastMigration();
        if (last.name === 'AuditTree1795000000027') break;
      }
    } finally {
      await all.destroy();
    }
    const columns: { column_name: string }[] = await db.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'audit_logs' AND column_name IN ('written', 'pos')`,
    );
    expect(columns).toEqual([]);
    await db.query('UPDATE audit_logs SET seq = 5 WHERE id = $1', [ROWS[5].id]);
  });
});
