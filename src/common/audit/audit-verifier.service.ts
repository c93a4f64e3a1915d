import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { Clock } from '../jobs/clock';
import { AuditChainService, type ChainProblem } from './audit-chain.service';
import { AuditSigningKeys } from './audit-signing-keys.service';
import { AuditTreeRepository, type StoredCheckpoint, type TreeState } from './audit-tree.repository';
import { logLeafHash, logObject } from './log-object';
import { TreeFrontier } from './tree/merkle';
import {
  checkpointTime,
  noteSignedBy,
  parseCheckpoint,
  parseNote,
  type Checkpoint,
  type NoteKey,
} from './tree/signed-note';
import { TILE_WIDTH } from './tree/tiles';

/** What went wrong with a tenant's tree (or with a kept checkpoint). */
export interface TreeProblem {
  tenant_id: string | null;
  problem:
    | 'leaf_altered'
    | 'leaf_deleted'
    | 'leaf_inserted'
    | 'leaf_reordered'
    | 'leaf_deleted_within_retention'
    | 'kept_hash_missing'
    | 'checkpoint_signature_invalid'
    | 'checkpoint_root_mismatch'
    | 'kept_checkpoint_invalid'
    | 'kept_checkpoint_mismatch';
  /** The first leaf that differs, where it can be told: its 0-based index and its row's id. */
  leaf_index?: number;
  id?: string | null;
  tree_size?: number;
  /** Where a root mismatch cannot be pinned to one leaf: the first differing leaf is in [from, to). */
  differing_leaves?: { from: number; to: number };
  /** Leaves whose rows were removed too early: [from, to), `to` the first leaf whose row the log holds. */
  removed_leaves?: { from: number; to: number };
  detail?: string;
}

export interface AuditReport {
  tenants_checked: number;
  rows_checked: number;
  checkpoints_checked: number;
  problems: (ChainProblem | TreeProblem)[];
}

const PAGE = 5000;

/** A checkpoint kept outside the service, its signature checked. */
type Kept = Checkpoint & { tenantId: string };
/**
 * A leaf is appended (and so in no checkpoint signed before) a little after its row is written: a
 * transaction's time, a tick of the checkpointer, a backlog. A checkpoint's time bounds its later leaves'
 * write time from below only within that margin, so retention's honest deletions near the end of the
 * period are not taken for early ones.
 */
const APPEND_MARGIN_SECONDS = 3600;

/**
 * `vault logs verify`: recomputes each tenant's tree from its rows (and, below its first retained leaf,
 * from the kept hashes), compares each row's leaf with the stored one, checks every stored checkpoint's
 * signature and root, and, given a checkpoint kept outside the service, that the log still holds the tree
 * it signed. The rows of the old hash chain are verified as they were. Only keys this service can vouch
 * for (their seeds open under its master keys) count as signing keys.
 *
 * Rows removed from the start of a tenant's log must be older than LOG_RETENTION_DAYS, and the database's
 * own record of what retention removed is not taken for it: a leaf was written after every checkpoint
 * smaller than its index, so the newest signed checkpoint of size at most i bounds leaf i's write time from
 * below, by its signed `time`. A removed leaf whose bound is within the retention period was removed early.
 * The leaves of a tenant's first checkpoint have no such bound.
 */
@Injectable()
export class AuditVerifier {
  constructor(
    private readonly trees: AuditTreeRepository,
    private readonly chain: AuditChainService,
    private readonly keys: AuditSigningKeys,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async verify(options: { tenant?: string; checkpoint?: string } = {}): Promise<AuditReport> {
    const trusted = await this.keys.trusted();
    const report: AuditReport = { tenants_checked: 0, rows_checked: 0, checkpoints_checked: 0, problems: [] };
    let kept: Kept | undefined;
    let tenant = options.tenant;
    if (options.checkpoint !== undefined) {
      const checked = this.checkKept(options.checkpoint, trusted);
      if ('problem' in checked) {
        report.problems.push(checked);
        return report;
      }
      kept = checked;
      tenant = kept.tenantId;
    }
    const chain = await this.chain.verify(tenant);
    report.rows_checked += chain.rows_checked;
    report.problems.push(...chain.problems);

    const trees = tenant
      ? [await this.trees.tree(tenant)].filter((t) => t !== undefined)
      : await this.trees.allTrees();
    if (kept && !trees.length)
      report.problems.push({
        tenant_id: kept.tenantId,
        problem: 'kept_checkpoint_mismatch',
        tree_size: kept.treeSize,
        detail: 'the log has no tree for this tenant any more',
      });
    for (const tree of trees) {
      report.tenants_checked++;
      await this.verifyTree(tree, trusted, kept?.tenantId === tree.tenantId ? kept : undefined, report);
    }
    report.tenants_checked = Math.max(report.tenants_checked, chain.tenants_checked);
    return report;
  }

  /**
   * Parses a kept signed note, as a file holds it, and checks its signature; answers its tenant, size,
   * root and time. The note ends with its last signature line's newline; one extra newline at the end of
   * the file (as `jq -r .note > file` writes) is not the note's, and is accepted.
   */
  private checkKept(file: string, trusted: NoteKey[]): Kept | TreeProblem {
    const invalid = (detail: string): TreeProblem => ({
      tenant_id: null,
      problem: 'kept_checkpoint_invalid',
      detail,
    });
    const newlines = /\n*$/.exec(file)![0].length;
    if (file.includes('\r'))
      return invalid('not a signed checkpoint note: its lines end with CR LF, a signed note with LF only');
    if (newlines === 0) return invalid('not a signed checkpoint note: it does not end with a newline');
    if (newlines > 2)
      return invalid(
        `not a signed checkpoint note: it ends with ${newlines - 1} newlines after its last line, ` +
          'where one extra newline is accepted',
      );
    const note = newlines === 2 ? file.slice(0, -1) : file;
    const parsed = parseNote(note);
    const body = parsed && parseCheckpoint(parsed.text);
    if (!parsed || !body) return invalid('not a signed checkpoint note');
    if (!trusted.some((key) => noteSignedBy(note, key)))
      return invalid('no signature by a key of this service (its seed must open under a master key)');
    const match = /\/audit\/([0-9a-f-]{36})$/.exec(body.origin);
    if (!match) return invalid(`origin "${body.origin}" does not name a tenant's audit log`);
    return { ...body, tenantId: match[1] };
  }

  private async verifyTree(
    tree: TreeState,
    trusted: NoteKey[],
    kept: Kept | undefined,
    report: AuditReport,
  ): Promise<void> {
    const tenantId = tree.tenantId;
    const checkpoints = await this.trees.checkpoints(tenantId);
    const sizes = new Set([...checkpoints.map((c) => c.treeSize), ...(kept ? [kept.treeSize] : [])]);
    const roots = new Map<number, Buffer>();
    const frontier = new TreeFrontier();
    const add = (leaf: Buffer) => {
      frontier.append(leaf);
      if (sizes.has(frontier.size)) roots.set(frontier.size, frontier.root()!);
    };
    const stored = new StoredLeaves(this.trees, tenantId);
    let problem: TreeProblem | undefined;

    // Leaves whose rows retention deleted: their kept hashes.
    for (let i = 0; i < tree.retainedFrom; i++) {
      const leaf = await stored.at(i);
      if (!leaf) {
        problem = { tenant_id: tenantId, problem: 'kept_hash_missing', leaf_index: i };
        break;
      }
      add(leaf);
    }

    // The rows, in the leaf order, each against the leaf hash stored when it was appended.
    const upTo = await this.trees.appendedUpTo();
    let after = { written: '-1', pos: '-1' };
    let index = tree.retainedFrom;
    const walked = !problem;
    let firstRow: number | undefined;
    while (!problem) {
      const rows = await this.trees.appendedRows(after, upTo, PAGE, tenantId);
      for (const row of rows) {
        firstRow ??= index;
        const leaf = logLeafHash(logObject(row));
        const expected = await stored.at(index);
        if (!problem && expected && !expected.equals(leaf))
          problem = await this.classify(tenantId, index, row.id);
        add(leaf);
        index++;
        report.rows_checked++;
      }
      if (rows.length < PAGE) break;
      const last = rows[rows.length - 1];
      after = { written: String(last.written), pos: String(last.pos) };
    }
    if (!problem && index < tree.size) {
      const missing = await this.trees.leaf(tenantId, { leafIndex: index });
      problem = {
        tenant_id: tenantId,
        problem: 'leaf_deleted',
        leaf_index: index,
        id: missing?.rowId ?? null,
      };
    }
    if (!problem && index > tree.size)
      problem = { tenant_id: tenantId, problem: 'leaf_inserted', leaf_index: tree.size, id: null };
    if (problem) report.problems.push(problem);

    // Every stored checkpoint: signed by a key of this service, and the root of the tree recomputed.
    let matched = 0;
    const opened = checkpoints.map((c) => this.signedCheckpoint(c, trusted));
    for (const [i, c] of checkpoints.entries()) {
      report.checkpoints_checked++;
      if (!opened[i]) {
        report.problems.push({
          tenant_id: tenantId,
          problem: 'checkpoint_signature_invalid',
          tree_size: c.treeSize,
        });
        continue;
      }
      const root = roots.get(c.treeSize);
      if (root?.equals(c.rootHash)) {
        matched = c.treeSize;
        continue;
      }
      report.problems.push({
        tenant_id: tenantId,
        problem: 'checkpoint_root_mismatch',
        tree_size: c.treeSize,
        differing_leaves: { from: matched, to: c.treeSize },
        ...(problem?.leaf_index !== undefined ? { leaf_index: problem.leaf_index, id: problem.id } : {}),
      });
      break;
    }

    if (kept && !roots.get(kept.treeSize)?.equals(kept.rootHash)) {
      const below = checkpoints.filter(
        (c) => c.treeSize < kept.treeSize && roots.get(c.treeSize)?.equals(c.rootHash),
      );
      report.problems.push({
        tenant_id: tenantId,
        problem: 'kept_checkpoint_mismatch',
        tree_size: kept.treeSize,
        ...(problem?.leaf_index !== undefined && problem.leaf_index < kept.treeSize
          ? { leaf_index: problem.leaf_index, id: problem.id }
          : { differing_leaves: { from: below.at(-1)?.treeSize ?? 0, to: kept.treeSize } }),
        detail:
          kept.treeSize > frontier.size
            ? `the log holds ${frontier.size} leaves, fewer than the kept checkpoint's ${kept.treeSize}`
            : 'the log does not hold the tree the kept checkpoint signed',
      });
    }

    // Rows removed from the start of the log, where it now starts: at its first row (every leaf when it
    // holds none). Where that is, the recomputed roots have checked against the signed ones above.
    const signed = [...(kept ? [kept] : []), ...opened].filter((c) => c !== undefined);
    const start =
      firstRow ?? (walked ? Math.max(tree.retainedFrom, tree.size, ...signed.map((c) => c.treeSize)) : 0);
    const early = this.removedEarly(start, signed);
    if (early)
      report.problems.push({
        tenant_id: tenantId,
        problem: 'leaf_deleted_within_retention',
        leaf_index: early.treeSize,
        tree_size: early.treeSize,
        removed_leaves: { from: early.treeSize, to: start },
        detail:
          `the log starts at leaf ${start}, but the checkpoint of size ${early.treeSize} signed at ` +
          `${new Date(early.time! * 1000).toISOString()} shows that leaves ${early.treeSize} to ${start - 1} ` +
          `were written after it, less than LOG_RETENTION_DAYS (${this.config.LOG_RETENTION_DAYS}) ago`,
      });
  }

  /**
   * Of the signed checkpoints (their signatures checked), the smallest below `start` signed within the
   * retention period (less its margin): the leaves from its size up to `start` were written since, and
   * retention may not have removed them yet.
   */
  private removedEarly(start: number, signed: Checkpoint[]): Checkpoint | undefined {
    const since =
      checkpointTime(this.clock.now()) - this.config.LOG_RETENTION_DAYS * 86_400 + APPEND_MARGIN_SECONDS;
    return signed
      .filter((c) => c.time !== undefined && c.time > since && c.treeSize < start)
      .sort((a, b) => a.treeSize - b.treeSize)[0];
  }

  /** The checkpoint a stored note signs, when a key of this service signed it and it is the row's. */
  private signedCheckpoint(c: StoredCheckpoint, trusted: NoteKey[]): Checkpoint | undefined {
    const body = parseNote(c.note);
    const parsed = body && parseCheckpoint(body.text);
    return parsed &&
      parsed.treeSize === c.treeSize &&
      parsed.rootHash.equals(c.rootHash) &&
      parsed.origin.endsWith(`/audit/${c.tenantId}`) &&
      trusted.some((key) => noteSignedBy(c.note, key))
      ? parsed
      : undefined;
  }

  /** Names what happened at the first leaf whose row no longer gives the stored hash. */
  private async classify(tenantId: string, index: number, rowId: string): Promise<TreeProblem> {
    const placed = await this.trees.leaf(tenantId, { rowId });
    const at = (problem: TreeProblem['problem'], id: string | null): TreeProblem => ({
      tenant_id: tenantId,
      problem,
      leaf_index: index,
      id,
    });
    if (!placed) return at('leaf_inserted', rowId);
    if (placed.leafIndex === index) return at('leaf_altered', rowId);
    if (placed.leafIndex < index) return at('leaf_reordered', rowId);
    // The row belongs further on: the row of this leaf is gone, or further on too.
    const owner = await this.trees.leaf(tenantId, { leafIndex: index });
    const ownerRow = owner && (await this.trees.rowWithLeaf(tenantId, owner.rowId));
    return ownerRow ? at('leaf_reordered', owner.rowId) : at('leaf_deleted', owner?.rowId ?? null);
  }
}

/** A tenant's stored leaf hashes, read a few tiles at a time in order. */
class StoredLeaves {
  private tiles = new Map<number, Buffer>();
  private loadedUpTo = -1;

  constructor(
    private readonly trees: AuditTreeRepository,
    private readonly tenantId: string,
  ) {}

  async at(index: number): Promise<Buffer | undefined> {
    const tileIndex = Math.floor(index / TILE_WIDTH);
    if (tileIndex > this.loadedUpTo) {
      this.tiles = new Map();
      for (const tile of await this.trees.leafTiles(this.tenantId, tileIndex, 64))
        this.tiles.set(tile.index, tile.hashes);
      this.loadedUpTo = tileIndex + 63;
    }
    const tile = this.tiles.get(tileIndex);
    const offset = (index % TILE_WIDTH) * 32;
    return tile && tile.length >= offset + 32 ? tile.subarray(offset, offset + 32) : undefined;
  }
}
