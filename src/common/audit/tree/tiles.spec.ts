import { createHash } from 'node:crypto';
import { consistencyPath, inclusionPath, leafHash, rangeHash, rootHash, TreeFrontier } from './merkle';
import { ExpandedTile, TileNeeds, TileSet } from './tiles';

// The independent implementation: the standalone verifier tenants run (examples/verify-audit).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const independent = require('../../../../examples/verify-audit/verify-audit');

const leaves = (n: number, seed = 'leaf'): Buffer[] =>
  Array.from({ length: n }, (_, i) => leafHash(createHash('sha256').update(`${seed} ${i}`).digest()));

/** The tree as the checkpointer grows it: batches appended to the tiles, as many times as asked. */
function grown(all: Buffer[], batches: number[]): TileSet {
  const tiles = new TileSet();
  let size = 0;
  for (const batch of batches) {
    size = tiles.append(size, all.slice(size, size + batch));
  }
  size = tiles.append(size, all.slice(size));
  expect(size).toBe(all.length);
  return tiles;
}

/** Only the tiles a proof says it needs (as the proof endpoint reads them). */
function onlyNeeded(tiles: TileSet, work: (source: TileSet) => unknown): TileSet {
  const subset = new TileSet();
  for (const { level, index } of TileNeeds.of(work as never)) {
    const probe = tiles.changedTiles().find((tile) => tile.level === level && tile.index === index);
    if (probe) subset.add(probe);
  }
  return subset;
}

const SIZES = [
  ...Array.from({ length: 70 }, (_, i) => i + 1),
  127,
  128,
  129,
  255,
  256,
  257,
  300,
  511,
  512,
  513,
  777,
  1000,
];

describe('the tree from stored tiles, checked by the independent verifier', () => {
  it.each(SIZES)('size %i: the root, every inclusion proof and consistency proofs verify', (n) => {
    const all = leaves(n);
    const tiles = grown(all, [Math.ceil(n / 3), 1]);
    const root = rootHash(tiles, n);
    expect(Buffer.from(independent.rootFromLeaves(all)).equals(root)).toBe(true);
    const frontier = new TreeFrontier();
    all.forEach((leaf) => frontier.append(leaf));
    expect(frontier.root()!.equals(root)).toBe(true);

    const step = n > 100 ? 37 : 1;
    for (let i = 0; i < n; i += step) {
      const needed = onlyNeeded(tiles, (s) => inclusionPath(s, i, n));
      const path = inclusionPath(needed, i, n);
      expect(independent.verifyInclusion(all[i], i, n, path, root)).toBe(true);
      // A proof for another leaf, another index or another size does not verify.
      expect(independent.verifyInclusion(all[(i + 1) % n], i, n, path, root)).toBe(n === 1);
      if (n > 1) expect(independent.verifyInclusion(all[i], (i + 1) % n, n, path, root)).toBe(false);
    }
    for (let m = 1; m < n; m += step) {
      const needed = onlyNeeded(tiles, (s) => consistencyPath(s, m, n));
      const path = consistencyPath(needed, m, n);
      const first = Buffer.from(independent.rootFromLeaves(all.slice(0, m)));
      expect(rangeHash(tiles, 0, m).equals(first)).toBe(true);
      expect(independent.verifyConsistency(m, n, first, root, path)).toBe(true);
      expect(independent.verifyConsistency(m, n, root, first, path)).toBe(false);
    }
  });

  it('proves at every earlier size from the tiles of the grown tree (old checkpoints stay provable)', () => {
    const all = leaves(600);
    const tiles = grown(all, [100, 200]);
    for (const size of [1, 2, 100, 255, 256, 257, 300, 599]) {
      const root = Buffer.from(independent.rootFromLeaves(all.slice(0, size)));
      expect(rootHash(tiles, size).equals(root)).toBe(true);
      const i = size - 1;
      expect(independent.verifyInclusion(all[i], i, size, inclusionPath(tiles, i, size), root)).toBe(true);
    }
  });

  it('after retention: the remaining leaves prove from the kept tiles, whatever the rows lost', () => {
    // Retention deletes rows, never tiles: the level-0 tiles of the deleted leaves are what the tree keeps.
    // A proof of a remaining leaf reads no tile below its own but the few its path crosses.
    const all = leaves(1000);
    const tiles = grown(all, [512]);
    const root = rootHash(tiles, 1000);
    for (const i of [700, 768, 999]) {
      const needed = TileNeeds.of((s) => inclusionPath(s, i, 1000));
      expect(needed.every(({ level, index }) => level > 0 || index >= 2)).toBe(true);
      const path = inclusionPath(
        onlyNeeded(tiles, (s) => inclusionPath(s, i, 1000)),
        i,
        1000,
      );
      expect(independent.verifyInclusion(all[i], i, 1000, path, root)).toBe(true);
    }
  });

  it('with tiles expanded (as the proof server keeps them), proofs are the same and verify', () => {
    const n = 256 * 3 + 77;
    const all = leaves(n);
    const tiles = grown(all, [300]);
    const root = rootHash(tiles, n);
    const served = (work: (source: TileSet) => unknown): TileSet => {
      const kept: { level: number; index: number; tile: ExpandedTile }[] = [];
      for (const { level, index, entries } of TileNeeds.of(work as never)) {
        const tile = tiles.changedTiles().find((t) => t.level === level && t.index === index)!;
        expect(tile.hashes.length).toBeGreaterThanOrEqual(entries * 32);
        kept.push({ level, index, tile: new ExpandedTile(tile.hashes) });
      }
      return new TileSet([], kept);
    };
    for (let i = 0; i < n; i += 5) {
      const path = inclusionPath(
        served((s) => inclusionPath(s, i, n)),
        i,
        n,
      );
      expect(path).toEqual(inclusionPath(tiles, i, n));
      expect(independent.verifyInclusion(all[i], i, n, path, root)).toBe(true);
    }
    for (let m = 1; m < n; m += 11) {
      const path = consistencyPath(
        served((s) => consistencyPath(s, m, n)),
        m,
        n,
      );
      expect(path).toEqual(consistencyPath(tiles, m, n));
    }
    // Every subtree root inside a full tile, looked up, is the one hashed from its entries.
    const tile = tiles.changedTiles().find((t) => t.level === 0 && t.index === 1)!;
    const expanded = new ExpandedTile(tile.hashes);
    for (let count = 1; count <= 256; count *= 2)
      for (let first = 0; first < 256; first += count)
        expect(expanded.root(first, count)).toEqual(rangeHash(tiles, 256 + first, 256 + first + count));
    // A partial tile (the right edge: 77 leaves) gives the complete subtrees it holds, and no others.
    const edge = new ExpandedTile(tiles.changedTiles().find((t) => t.level === 0 && t.index === 3)!.hashes);
    expect(edge.entries).toBe(77);
    for (let count = 1; count <= 64; count *= 2)
      for (let first = 0; first + count <= 77; first += count)
        expect(edge.root(first, count)).toEqual(rangeHash(tiles, 768 + first, 768 + first + count));
    expect(() => edge.root(64, 16)).toThrow(/not in the tile/);
    expect(() => edge.root(0, 128)).toThrow(/not in the tile/);
    expect(() => new ExpandedTile(Buffer.alloc(31))).toThrow(/1 to 256/);
  });

  it("keeps 256 hashes per tile and adds a full tile's root to the level above", () => {
    const tiles = grown(leaves(256 * 256 + 3), [70_000]);
    const stored = tiles.changedTiles();
    expect(stored.filter((t) => t.level === 0)).toHaveLength(257);
    expect(stored.find((t) => t.level === 1 && t.index === 0)!.hashes).toHaveLength(256 * 32);
    expect(stored.find((t) => t.level === 2 && t.index === 0)!.hashes).toHaveLength(32);
    expect(TileSet.edge(256 * 256 + 3)).toEqual([
      { level: 0, index: 256 },
      { level: 2, index: 0 },
    ]);
  });
});
