import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { AppConfig } from '../../config/app-config';
import { LOCK_KEYS } from '../../database/data-source';
import { Clock } from '../jobs/clock';
import { ExclusiveJobRunner, Tick } from '../jobs/exclusive';
import type { Change } from '../unit-of-work/change';
import { AuditSigningKeys } from './audit-signing-keys.service';
import { AuditTreeRepository, type LeafOrder, type TreeRow, type TreeState } from './audit-tree.repository';
import { logLeafHash, logObject } from './log-object';
import { rootHash } from './tree/merkle';
import { checkpointBody, checkpointTime, signNote } from './tree/signed-note';
import { TileNeeds, TileSet } from './tree/tiles';

/** Rows appended per transaction: the checkpointer loops until it has caught up or used its time. */
const BATCH = 20_000;
/** How long one tick may go on appending before it leaves the rest to the next. */
const TICK_BUDGET_MS = 5_000;

/** The checkpoint as `GET /logs/checkpoint` answers it and the `audit:checkpoint` event carries it. */
export interface CheckpointDto {
  origin: string;
  tree_size: number;
  root_hash: string;
  created_at: string;
  note: string;
}

/**
 * Off the request path, once a second on one instance at a time: appends the audit rows committed since
 * the last run to their tenants' trees (rows in the leaf order `(written, pos)`, below the oldest running
 * transaction), then, for each tenant whose tree grew and whose last checkpoint is at least
 * AUDIT_CHECKPOINT_SECONDS old, signs a checkpoint and reports it (`audit:checkpoint`). Writes no audit
 * row. Each batch is one transaction: leaves, tiles, sizes and the cursor move together.
 */
@Injectable()
export class AuditCheckpointer {
  constructor(
    private readonly trees: AuditTreeRepository,
    private readonly keys: AuditSigningKeys,
    private readonly jobs: ExclusiveJobRunner,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  @Interval(1_000)
  async checkpointTick(): Promise<void> {
    await this.run({ tickMs: 1_000 });
  }

  /**
   * Appends what has committed (in batches, within the tick's budget) and signs the checkpoints due;
   * returns how many rows were appended, or undefined when another instance holds the job.
   */
  async run(tick?: Tick): Promise<number | undefined> {
    const started = Date.now();
    let appended = 0;
    for (let first = true; ; first = false) {
      const batch = await this.jobs.run(
        'audit-checkpoint',
        LOCK_KEYS.jobAuditCheckpoint,
        (change) => this.appendBatch(change),
        first ? tick : undefined,
      );
      if (batch === undefined) return first ? undefined : appended;
      appended += batch;
      if (batch < BATCH || Date.now() - started > TICK_BUDGET_MS) break;
    }
    await this.jobs.run('audit-checkpoint', LOCK_KEYS.jobAuditCheckpoint, (change) => this.signDue(change));
    return appended;
  }

  /** Appends the next batch of rows to their trees; returns how many. */
  private async appendBatch(change: Change): Promise<number> {
    const cursor = await this.trees.cursor(change);
    const horizon = await this.trees.horizon(change);
    const rows = await this.trees.rowsToAppend(change, cursor, horizon, BATCH);
    if (!rows.length) return 0;
    const byTenant = new Map<string, TreeRow[]>();
    for (const row of rows) {
      const list = byTenant.get(row.tenant_id);
      if (list) list.push(row);
      else byTenant.set(row.tenant_id, [row]);
    }
    const states = new Map(
      (await this.trees.trees(change, [...byTenant.keys()])).map((t) => [t.tenantId, t]),
    );

    const leaves: { tenantId: string; rowId: string; leafIndex: number }[] = [];
    const tiles: Parameters<AuditTreeRepository['append']>[2] = [];
    const sizes: { tenantId: string; size: number }[] = [];
    for (const [tenantId, tenantRows] of byTenant) {
      const size = states.get(tenantId)?.size ?? 0;
      const set = new TileSet(await this.trees.tiles(change, tenantId, TileSet.edge(size)));
      tenantRows.forEach((row, i) => leaves.push({ tenantId, rowId: row.id, leafIndex: size + i }));
      const grown = set.append(
        size,
        tenantRows.map((row) => logLeafHash(logObject(row))),
      );
      tiles.push(...set.changedTiles().map((t) => ({ ...t, tenantId })));
      sizes.push({ tenantId, size: grown });
    }
    const last = rows[rows.length - 1];
    const next: LeafOrder = { written: String(last.written), pos: String(last.pos) };
    await this.trees.append(change, leaves, tiles, sizes, next);
    return rows.length;
  }

  /** Signs a checkpoint of every tree grown since its last one, if that is a period old. */
  private async signDue(change: Change): Promise<number> {
    const now = this.clock.now();
    const due = await this.trees.dueForCheckpoint(
      change,
      new Date(now.getTime() - this.config.AUDIT_CHECKPOINT_SECONDS * 1000),
    );
    if (!due.length) return 0;
    const key = await this.keys.current(change, now);
    for (const tree of due) {
      const root = await this.root(change, tree);
      const body = checkpointBody({
        origin: this.keys.origin(tree.tenantId),
        treeSize: tree.size,
        rootHash: root,
        time: checkpointTime(now),
      });
      const note = signNote(body, key.name, key.seed);
      await this.trees.addCheckpoint(change, {
        tenantId: tree.tenantId,
        treeSize: tree.size,
        rootHash: root,
        keyId: key.keyId,
        note,
        createdAt: now,
      });
      const data: CheckpointDto = {
        origin: this.keys.origin(tree.tenantId),
        tree_size: tree.size,
        root_hash: root.toString('base64'),
        created_at: now.toISOString(),
        note,
      };
      change.emit({ tenantId: tree.tenantId, type: 'audit:checkpoint', entityId: data.origin, data });
    }
    return due.length;
  }

  private async root(change: Change, tree: TreeState): Promise<Buffer> {
    const needed = TileNeeds.of((source) => rootHash(source, tree.size));
    const set = new TileSet(await this.trees.tiles(change, tree.tenantId, needed));
    return rootHash(set, tree.size);
  }
}
