import { createHash } from 'node:crypto';

/**
 * RFC 9162 section 2.1 Merkle tree hashing, and its inclusion and consistency proofs, over a tree whose
 * complete subtrees' hashes come from a `NodeSource` (the stored tiles, or leaves in memory).
 */

const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

/** SHA-256(0x00 || leaf). */
export const leafHash = (leaf: Buffer): Buffer => createHash('sha256').update(LEAF).update(leaf).digest();

/** SHA-256(0x01 || left || right). */
export const nodeHash = (left: Buffer, right: Buffer): Buffer =>
  createHash('sha256').update(NODE).update(left).update(right).digest();

/** The hash of the complete subtree of `2^level` leaves that starts at leaf `index * 2^level`. */
export interface NodeSource {
  node(level: number, index: number): Buffer;
}

/** The largest power of two below `n` (n > 1). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function log2(n: number): number | undefined {
  let level = 0;
  for (let k = 1; k <= n; k *= 2, level++) if (k === n) return level;
  return undefined;
}

/** MTH(D[start:end]), the RFC's recursive definition, reading complete aligned subtrees from `source`. */
export function rangeHash(source: NodeSource, start: number, end: number): Buffer {
  const n = end - start;
  if (n < 1) throw new RangeError('an empty range has no hash here');
  const level = log2(n);
  if (level !== undefined && start % n === 0) return source.node(level, start / n);
  const k = splitPoint(n);
  return nodeHash(rangeHash(source, start, start + k), rangeHash(source, start + k, end));
}

/** The tree's root at `size` leaves (RFC 9162 MTH). */
export const rootHash = (source: NodeSource, size: number): Buffer => rangeHash(source, 0, size);

/** PATH(m, D[start:end]) of RFC 9162 2.1.3.1: the inclusion proof of leaf `index` in a tree of `size`. */
export function inclusionPath(source: NodeSource, index: number, size: number): Buffer[] {
  if (index < 0 || index >= size) throw new RangeError('the leaf is not in the tree');
  const path = (m: number, start: number, end: number): Buffer[] => {
    const n = end - start;
    if (n === 1) return [];
    const k = splitPoint(n);
    return m < k
      ? [...path(m, start, start + k), rangeHash(source, start + k, end)]
      : [...path(m - k, start + k, end), rangeHash(source, start, start + k)];
  };
  return path(index, 0, size);
}

/** PROOF(m, D[n]) of RFC 9162 2.1.4.1: that the tree of `first` leaves is a prefix of the tree of `second`. */
export function consistencyPath(source: NodeSource, first: number, second: number): Buffer[] {
  if (first < 1 || first > second) throw new RangeError('consistency needs 0 < first <= second');
  const subproof = (m: number, start: number, end: number, whole: boolean): Buffer[] => {
    const n = end - start;
    if (m === n) return whole ? [] : [rangeHash(source, start, end)];
    const k = splitPoint(n);
    return m <= k
      ? [...subproof(m, start, start + k, whole), rangeHash(source, start + k, end)]
      : [...subproof(m - k, start + k, end, false), rangeHash(source, start, start + k)];
  };
  return subproof(first, 0, second, true);
}

/** Leaves in memory as a node source (hashes complete subtrees on demand). */
export class LeafArray implements NodeSource {
  constructor(private readonly leaves: Buffer[]) {}

  node(level: number, index: number): Buffer {
    if (level === 0) return this.leaves[index];
    return nodeHash(this.node(level - 1, index * 2), this.node(level - 1, index * 2 + 1));
  }
}

/**
 * A tree's right edge as it grows: the roots of its complete subtrees, largest first (one per bit of
 * the size). Appending a leaf merges equal subtrees; the root folds them from the right.
 */
export class TreeFrontier {
  private readonly stack: { level: number; hash: Buffer }[] = [];
  size = 0;

  append(leaf: Buffer): void {
    let entry = { level: 0, hash: leaf };
    while (this.stack.length && this.stack[this.stack.length - 1].level === entry.level) {
      const left = this.stack.pop()!;
      entry = { level: entry.level + 1, hash: nodeHash(left.hash, entry.hash) };
    }
    this.stack.push(entry);
    this.size++;
  }

  root(): Buffer | undefined {
    let hash: Buffer | undefined;
    for (let i = this.stack.length - 1; i >= 0; i--)
      hash = hash ? nodeHash(this.stack[i].hash, hash) : this.stack[i].hash;
    return hash;
  }
}
