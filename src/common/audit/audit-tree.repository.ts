import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GenerateSql } from '../../database/generate-sql';
import { columnsOf, insertOf, type RowOf, queryRows } from '../../database/table';
import type { Change } from '../unit-of-work/change';
import {
  AuditCheckpointEntity,
  AuditLeafEntity,
  AuditTreeEntity,
  AuditTreeTileEntity,
} from './entities/audit-tree.entity';
import { AuditLogEntity } from './entities/audit-log.entity';
import { LOG_COLUMNS, type LogColumns } from './log-object';
import type { LeafOrder, StoredCheckpoint, TreeRow, TreeState } from './audit-tree.types';
import type { Tile } from './tree/tiles';

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_ROW = '00000000-0000-4000-8000-000000000002';
const EXAMPLE_TILE: Tile = { level: 0, index: 0, hashes: Buffer.alloc(64, 7) };

export type { LeafOrder, StoredCheckpoint, TreeRow, TreeState } from './audit-tree.types';

const ROW_COLUMNS = columnsOf(AuditLogEntity, 'a', { only: [...LOG_COLUMNS, 'written', 'pos', 'seq'] });
const TREE_COLUMNS = columnsOf(AuditTreeEntity);
const CHECKPOINT_COLUMNS = columnsOf(AuditCheckpointEntity);

const tree = (row: RowOf<AuditTreeEntity>): TreeState => ({
  tenantId: row.tenant_id,
  size: Number(row.size),
  retainedFrom: Number(row.retained_from),
  checkpointSize: Number(row.checkpoint_size),
  checkpointAt: row.checkpoint_at,
});

const checkpoint = (row: RowOf<AuditCheckpointEntity>): StoredCheckpoint => ({
  tenantId: row.tenant_id,
  treeSize: Number(row.tree_size),
  rootHash: row.root_hash,
  keyId: row.key_id,
  note: row.note,
  createdAt: row.created_at,
});

const tile = (row: Pick<RowOf<AuditTreeTileEntity>, 'level' | 'idx' | 'hashes'>): Tile => ({
  level: Number(row.level),
  index: Number(row.idx),
  hashes: row.hashes,
});

/**
 * The tenants' audit trees: appending rows as leaves (in the checkpointer's change, which holds its
 * lock), the tiles of hashes, the signed checkpoints, and the reads proofs and verification need (through
 * the pool).
 */
@Injectable()
export class AuditTreeRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The last row appended to a tree. */
  @GenerateSql({ change: true, params: [], answers: [[{ written: '-1', pos: '-1' }]] })
  async cursor(change: Change): Promise<LeafOrder> {
    const [row] = await queryRows<LeafOrder>(change, 'SELECT written, pos FROM audit_tree_cursor');
    return { written: String(row.written), pos: String(row.pos) };
  }

  /**
   * The leaf order's horizon: no transaction below it can still insert a row. It is the oldest
   * transaction still running in this database (any database's would do, but would let a long transaction
   * elsewhere on the server hold checkpoints back), or the next one to start. It must be read in a
   * statement of its own, before the rows: a transaction that ends between this statement's snapshot and
   * its read of the running ones is then visible to the next statement.
   */
  @GenerateSql({ change: true, params: [], answers: [[{ horizon: '800' }]] })
  async horizon(change: Change): Promise<string> {
    const [{ horizon }] = await queryRows<{ horizon: string }>(
      change,
      `WITH next AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS x),
       running AS (
         SELECT backend_xid::text::bigint AS xid FROM pg_stat_activity
          WHERE datname = current_database() AND backend_xid IS NOT NULL
         UNION ALL
         SELECT transaction::text::bigint FROM pg_prepared_xacts WHERE database = current_database()
       )
       -- A running transaction's 32-bit id, as a 64-bit id of pg_current_xact_id(): the one nearest the next
       -- id (live ids are never 2^31 apart). One that started after this statement's snapshot is above it.
       SELECT least(next.x, min(next.x + d.d))::text AS horizon
         FROM next
         LEFT JOIN running AS r ON true
         LEFT JOIN LATERAL (SELECT r.xid - (next.x & 4294967295) AS raw) AS raw ON true
         LEFT JOIN LATERAL (SELECT CASE WHEN raw.raw > 2147483648 THEN raw.raw - 4294967296
                                        WHEN raw.raw < -2147483648 THEN raw.raw + 4294967296
                                        ELSE raw.raw END AS d) AS d ON true
        GROUP BY next.x`,
    );
    return horizon;
  }

  /** The next rows after `after` in the leaf order, of transactions below the horizon. */
  @GenerateSql({ change: true, params: [{ written: '700', pos: '12' }, '800', 10000] })
  rowsToAppend(change: Change, after: LeafOrder, horizon: string, limit: number): Promise<TreeRow[]> {
    return queryRows<TreeRow>(
      change,
      `SELECT ${ROW_COLUMNS} FROM audit_logs AS a
        WHERE (a.written, a.pos) > ($1::bigint, $2::bigint) AND a.written < $3::bigint
        ORDER BY a.written, a.pos
        LIMIT $4`,
      [after.written, after.pos, horizon, limit],
    );
  }

  /** The trees of these tenants (a tenant without one has no leaf yet). */
  @GenerateSql({ change: true, params: [[EXAMPLE_TENANT]] })
  async trees(change: Change, tenantIds: string[]): Promise<TreeState[]> {
    const rows = await queryRows<RowOf<AuditTreeEntity>>(
      change,
      `SELECT ${TREE_COLUMNS} FROM audit_trees WHERE tenant_id = ANY($1::uuid[])`,
      [tenantIds],
    );
    return rows.map(tree);
  }

  /** One tenant's tree, read through the pool. */
  @GenerateSql({ params: [EXAMPLE_TENANT] })
  async tree(tenantId: string): Promise<TreeState | undefined> {
    const rows: RowOf<AuditTreeEntity>[] = await this.dataSource.query(
      `SELECT ${TREE_COLUMNS} FROM audit_trees WHERE tenant_id = $1`,
      [tenantId],
    );
    return rows.map(tree)[0];
  }

  /** Every tree, by tenant. */
  @GenerateSql({ params: [] })
  async allTrees(): Promise<TreeState[]> {
    const rows: RowOf<AuditTreeEntity>[] = await this.dataSource.query(
      `SELECT ${TREE_COLUMNS} FROM audit_trees ORDER BY tenant_id`,
    );
    return rows.map(tree);
  }

  /** Tiles of one tenant's tree, in the change or through the pool. */
  @GenerateSql(
    { name: 'tiles', params: [EXAMPLE_TENANT, [{ level: 0, index: 3 }]] },
    { name: 'tilesInChange', change: true, params: [EXAMPLE_TENANT, [{ level: 0, index: 3 }]] },
  )
  async tiles(
    ...args:
      [Change, string, { level: number; index: number }[]] | [string, { level: number; index: number }[]]
  ): Promise<Tile[]> {
    const [change, tenantId, keys] = args.length === 3 ? args : [undefined, ...args];
    if (!keys.length) return [];
    const sql = `SELECT level, idx, hashes FROM audit_tree_tiles
      WHERE tenant_id = $1 AND (level, idx) IN (SELECT * FROM unnest($2::int[], $3::bigint[]))`;
    const params = [tenantId, keys.map((k) => k.level), keys.map((k) => k.index)];
    const rows: Pick<RowOf<AuditTreeTileEntity>, 'level' | 'idx' | 'hashes'>[] = change
      ? await change.query(sql, params)
      : await this.dataSource.query(sql, params);
    return rows.map(tile);
  }

  /** A tenant's level-0 tiles (leaf hashes) from index `from`, `limit` of them, in order (verification). */
  @GenerateSql({ params: [EXAMPLE_TENANT, 0, 64] })
  async leafTiles(tenantId: string, from: number, limit: number): Promise<Tile[]> {
    const rows: Pick<RowOf<AuditTreeTileEntity>, 'level' | 'idx' | 'hashes'>[] = await this.dataSource.query(
      `SELECT level, idx, hashes FROM audit_tree_tiles
        WHERE tenant_id = $1 AND level = 0 AND idx >= $2 ORDER BY idx LIMIT $3`,
      [tenantId, from, limit],
    );
    return rows.map(tile);
  }

  /**
   * Records appended leaves: where each row is, the tiles that changed, each tree's new size, and the
   * last row appended.
   */
  @GenerateSql({
    change: true,
    params: [
      [{ tenantId: EXAMPLE_TENANT, rowId: EXAMPLE_ROW, leafIndex: 0 }],
      [{ tenantId: EXAMPLE_TENANT, ...EXAMPLE_TILE }],
      [{ tenantId: EXAMPLE_TENANT, size: 1 }],
      { written: '700', pos: '12' },
    ],
  })
  async append(
    change: Change,
    leaves: { tenantId: string; rowId: string; leafIndex: number }[],
    tiles: (Tile & { tenantId: string })[],
    sizes: { tenantId: string; size: number }[],
    cursor: LeafOrder,
  ): Promise<void> {
    await change.query(
      `INSERT INTO audit_leaves (${columnsOf(AuditLeafEntity)})
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[])`,
      [leaves.map((l) => l.tenantId), leaves.map((l) => l.rowId), leaves.map((l) => l.leafIndex)],
    );
    await change.query(
      `INSERT INTO audit_tree_tiles (${columnsOf(AuditTreeTileEntity)})
       SELECT * FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::bytea[])
       ON CONFLICT (tenant_id, level, idx) DO UPDATE SET hashes = EXCLUDED.hashes`,
      [
        tiles.map((t) => t.tenantId),
        tiles.map((t) => t.level),
        tiles.map((t) => t.index),
        tiles.map((t) => t.hashes),
      ],
    );
    await change.query(
      `INSERT INTO audit_trees (tenant_id, size)
       SELECT * FROM unnest($1::uuid[], $2::bigint[])
       ON CONFLICT (tenant_id) DO UPDATE SET size = EXCLUDED.size`,
      [sizes.map((s) => s.tenantId), sizes.map((s) => s.size)],
    );
    await change.query('UPDATE audit_tree_cursor SET written = $1, pos = $2', [cursor.written, cursor.pos]);
  }

  /** Trees grown since their last checkpoint, which was made at or before `madeBefore` (or never). */
  @GenerateSql({ change: true, params: [new Date('2026-01-01T00:00:00.000Z')] })
  async dueForCheckpoint(change: Change, madeBefore: Date): Promise<TreeState[]> {
    const rows = await queryRows<RowOf<AuditTreeEntity>>(
      change,
      `SELECT ${TREE_COLUMNS} FROM audit_trees
        WHERE size > checkpoint_size AND (checkpoint_at IS NULL OR checkpoint_at <= $1)`,
      [madeBefore],
    );
    return rows.map(tree);
  }

  /** Stores a signed checkpoint and makes it the tree's latest. */
  @GenerateSql({
    change: true,
    params: [
      {
        tenantId: EXAMPLE_TENANT,
        treeSize: 1,
        rootHash: Buffer.alloc(32),
        keyId: '0a0b0c0d',
        note: 'note',
        createdAt: new Date('2026-01-01T00:00:00.000Z'),
      },
    ],
  })
  async addCheckpoint(change: Change, c: StoredCheckpoint): Promise<void> {
    const insert = insertOf(AuditCheckpointEntity, {
      tenant_id: c.tenantId,
      tree_size: String(c.treeSize),
      root_hash: c.rootHash,
      key_id: c.keyId,
      note: c.note,
      created_at: c.createdAt,
    });
    await change.query(insert.sql, insert.params);
    await change.query(
      'UPDATE audit_trees SET checkpoint_size = $2, checkpoint_at = $3 WHERE tenant_id = $1',
      [c.tenantId, c.treeSize, c.createdAt],
    );
  }

  /** A tenant's latest checkpoint, or the one of a given size. */
  @GenerateSql({ name: 'latest', params: [EXAMPLE_TENANT] }, { name: 'ofSize', params: [EXAMPLE_TENANT, 10] })
  async checkpoint(tenantId: string, treeSize?: number): Promise<StoredCheckpoint | undefined> {
    const rows: RowOf<AuditCheckpointEntity>[] = await this.dataSource.query(
      treeSize === undefined
        ? `SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE tenant_id = $1 ORDER BY tree_size DESC LIMIT 1`
        : `SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE tenant_id = $1 AND tree_size = $2`,
      treeSize === undefined ? [tenantId] : [tenantId, treeSize],
    );
    return rows.map(checkpoint)[0];
  }

  /** Every checkpoint of a tenant, smallest first (verification). */
  @GenerateSql({ params: [EXAMPLE_TENANT] })
  async checkpoints(tenantId: string): Promise<StoredCheckpoint[]> {
    const rows: RowOf<AuditCheckpointEntity>[] = await this.dataSource.query(
      `SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE tenant_id = $1 ORDER BY tree_size`,
      [tenantId],
    );
    return rows.map(checkpoint);
  }

  /**
   * A tenant's row and its leaf index (null while not appended), with the size of the tenant's latest
   * checkpoint (null before the first), in one round trip; undefined when there is no such row.
   */
  @GenerateSql({ params: [EXAMPLE_TENANT, EXAMPLE_ROW] })
  async rowWithLeaf(
    tenantId: string,
    rowId: string,
  ): Promise<{ row: LogColumns; leafIndex: number | null; checkpointSize: number | null } | undefined> {
    const rows: (TreeRow & { leaf_index: string | null; checkpoint_size: string | null })[] =
      await this.dataSource.query(
        `SELECT ${ROW_COLUMNS}, l.leaf_index, c.tree_size AS checkpoint_size FROM audit_logs AS a
           LEFT JOIN audit_leaves AS l ON l.tenant_id = a.tenant_id AND l.row_id = a.id
           LEFT JOIN LATERAL (SELECT tree_size FROM audit_checkpoints
                               WHERE tenant_id = a.tenant_id ORDER BY tree_size DESC LIMIT 1) AS c ON true
          WHERE a.tenant_id = $1 AND a.id = $2`,
        [tenantId, rowId],
      );
    return rows.map((r) => ({
      row: r,
      leafIndex: r.leaf_index === null ? null : Number(r.leaf_index),
      checkpointSize: r.checkpoint_size === null ? null : Number(r.checkpoint_size),
    }))[0];
  }

  /** Appended rows after `after` in the leaf order, of every tenant or one (verification walks them). */
  @GenerateSql(
    { name: 'appendedRows', params: [{ written: '700', pos: '12' }, { written: '900', pos: '40' }, 5000] },
    {
      name: 'appendedRowsOfTenant',
      params: [{ written: '700', pos: '12' }, { written: '900', pos: '40' }, 5000, EXAMPLE_TENANT],
    },
  )
  appendedRows(after: LeafOrder, upTo: LeafOrder, limit: number, tenantId?: string): Promise<TreeRow[]> {
    return queryRows<TreeRow>(
      this.dataSource,
      `SELECT ${ROW_COLUMNS} FROM audit_logs AS a
        WHERE (a.written, a.pos) > ($1::bigint, $2::bigint) AND (a.written, a.pos) <= ($3::bigint, $4::bigint)
          ${tenantId ? 'AND a.tenant_id = $6' : ''}
        ORDER BY a.written, a.pos
        LIMIT $5`,
      [after.written, after.pos, upTo.written, upTo.pos, limit, ...(tenantId ? [tenantId] : [])],
    );
  }

  /** The last row appended, read through the pool (verification). */
  @GenerateSql({ params: [], answers: [[{ written: '-1', pos: '-1' }]] })
  async appendedUpTo(): Promise<LeafOrder> {
    const [row]: LeafOrder[] = await this.dataSource.query('SELECT written, pos FROM audit_tree_cursor');
    return { written: String(row.written), pos: String(row.pos) };
  }

  /** Which leaf a row was appended as, or which row a leaf is (verification names them). */
  @GenerateSql(
    { name: 'leafOfRow', params: [EXAMPLE_TENANT, { rowId: EXAMPLE_ROW }] },
    { name: 'rowOfLeaf', params: [EXAMPLE_TENANT, { leafIndex: 4 }] },
  )
  async leaf(
    tenantId: string,
    which: { rowId: string } | { leafIndex: number },
  ): Promise<{ rowId: string; leafIndex: number } | undefined> {
    const rows: { row_id: string; leaf_index: string }[] = await this.dataSource.query(
      `SELECT row_id, leaf_index FROM audit_leaves WHERE tenant_id = $1 AND ${
        'rowId' in which ? 'row_id = $2' : 'leaf_index = $2'
      } LIMIT 1`,
      [tenantId, 'rowId' in which ? which.rowId : which.leafIndex],
    );
    return rows.map((r) => ({ rowId: r.row_id, leafIndex: Number(r.leaf_index) }))[0];
  }

  /**
   * Retention: deletes the appended rows written before the first row created at or after `cutoff`, in
   * the leaf order (so that every tree loses a prefix of its leaves), with their leaf entries, and moves
   * each tree's first retained leaf past them. Returns how many rows went.
   */
  @GenerateSql({ change: true, params: [new Date('2026-01-01T00:00:00.000Z')], answers: [[{ n: 0 }]] })
  async deleteRetained(change: Change, cutoff: Date): Promise<number> {
    const [{ n }] = await queryRows<{ n: number }>(
      change,
      `WITH cut AS (
         SELECT written, pos FROM audit_logs WHERE created_at >= $1 ORDER BY written, pos LIMIT 1
       ), gone AS (
         DELETE FROM audit_logs AS a
          USING audit_tree_cursor AS c
          WHERE (a.written, a.pos) <= (c.written, c.pos)
            AND (NOT EXISTS (SELECT 1 FROM cut) OR (a.written, a.pos) < (SELECT written, pos FROM cut))
         RETURNING a.tenant_id, a.id
       ), leaves AS (
         DELETE FROM audit_leaves AS l USING gone AS g
          WHERE l.tenant_id = g.tenant_id AND l.row_id = g.id
         RETURNING l.tenant_id, l.leaf_index
       ), moved AS (
         UPDATE audit_trees AS t SET retained_from = greatest(t.retained_from, m.next)
           FROM (SELECT tenant_id, max(leaf_index) + 1 AS next FROM leaves GROUP BY tenant_id) AS m
          WHERE t.tenant_id = m.tenant_id
       )
       SELECT count(*)::int AS n FROM gone`,
      [cutoff],
    );
    return n;
  }
}
