import type { LogColumns } from './log-object';

/** The shapes the audit tree's repository answers (`audit-tree.repository.ts`). */

/** A place in the leaf order of every tree: the inserting transaction's id, then the insertion sequence. */
export interface LeafOrder {
  written: string;
  pos: string;
}

/** An audit row as the tree reads it: its log object's columns and its place. */
export type TreeRow = LogColumns & LeafOrder & { seq: string | null };

export interface TreeState {
  tenantId: string;
  size: number;
  retainedFrom: number;
  checkpointSize: number;
  checkpointAt: Date | null;
}

export interface StoredCheckpoint {
  tenantId: string;
  treeSize: number;
  rootHash: Buffer;
  keyId: string;
  note: string;
  createdAt: Date;
}
