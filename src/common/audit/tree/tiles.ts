import { nodeHash, type NodeSource } from './merkle';

/**
 * The tree's hashes as transparency logs store them: in tiles of up to 256 hashes. The tile at
 * (level `t`, index `j`) holds the hashes of the complete subtrees of height `8t` numbered
 * `256j .. 256j + 255` (level 0: the leaf hashes). A tile fills from the left; the one at a level's right
 * edge is partial. Any complete subtree's hash is in one tile or a few hashes of one tile away.
 */
export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;
const HASH = 32;

export type TileKey = `${number}/${number}`;
export const tileKey = (level: number, index: number): TileKey => `${level}/${index}`;

export interface Tile {
  level: number;
  index: number;
  /** The hashes, 32 bytes each, concatenated. */
  hashes: Buffer;
}

/** The tile and the entries in it that give `node(level, index)`. */
function locate(
  level: number,
  index: number,
): { tile: TileKey; tileLevel: number; tileIndex: number; first: number; count: number } {
  const tileLevel = Math.floor(level / TILE_HEIGHT);
  const count = 2 ** (level - tileLevel * TILE_HEIGHT);
  const firstEntry = index * count;
  const tileIndex = Math.floor(firstEntry / TILE_WIDTH);
  return { tile: tileKey(tileLevel, tileIndex), tileLevel, tileIndex, first: firstEntry % TILE_WIDTH, count };
}

/** The root of the complete subtree over `count` (a power of two) of a tile's entries from `first`. */
function subtreeRoot(tile: Buffer, first: number, count: number): Buffer {
  let hashes: Buffer[] = [];
  for (let i = first; i < first + count; i++) hashes.push(tile.subarray(i * HASH, (i + 1) * HASH));
  while (hashes.length > 1) {
    const up: Buffer[] = [];
    for (let i = 0; i < hashes.length; i += 2) up.push(nodeHash(hashes[i], hashes[i + 1]));
    hashes = up;
  }
  return Buffer.from(hashes[0]);
}

/**
 * A tile with the hash of every complete subtree inside it, computed once: `levels[h]` holds the roots
 * over each aligned run of `2^h` entries, concatenated (a full tile: its 255 inner nodes). A tile's entries
 * never change, it only grows at its end, so a proof server keeps these: a proof through them hashes
 * nothing, and one whose tree needs no more entries than a kept tile holds reads nothing either.
 */
export class ExpandedTile {
  private readonly levels: Buffer[];
  /** How many entries (hashes) the tile held when it was expanded. */
  readonly entries: number;

  constructor(readonly hashes: Buffer) {
    if (!hashes.length || hashes.length % HASH || hashes.length > TILE_WIDTH * HASH)
      throw new Error('a tile holds 1 to 256 hashes');
    this.entries = hashes.length / HASH;
    this.levels = [hashes];
    for (let below = hashes; below.length >= 2 * HASH;) {
      const pairs = Math.floor(below.length / HASH / 2);
      const up = Buffer.alloc(pairs * HASH);
      for (let i = 0; i < pairs; i++)
        nodeHash(
          below.subarray(2 * i * HASH, (2 * i + 1) * HASH),
          below.subarray((2 * i + 1) * HASH, (2 * i + 2) * HASH),
        ).copy(up, i * HASH);
      this.levels.push(up);
      below = up;
    }
  }

  /** The root of the complete subtree over `count` (a power of two) entries from `first` (a multiple of it). */
  root(first: number, count: number): Buffer {
    const level = this.levels[Math.log2(count)];
    const at = (first / count) * HASH;
    if (!level || at + HASH > level.length)
      throw new Error(`entries ${first}..${first + count - 1} are not in the tile`);
    return Buffer.from(level.subarray(at, at + HASH));
  }
}

/**
 * The tiles whose hashes `work` reads, and how many entries of each it reads at most: run once against
 * this to learn what to load, then for real.
 */
export class TileNeeds implements NodeSource {
  readonly keys = new Map<TileKey, number>();
  private static readonly ZERO = Buffer.alloc(HASH);

  node(level: number, index: number): Buffer {
    const at = locate(level, index);
    this.keys.set(at.tile, Math.max(this.keys.get(at.tile) ?? 0, at.first + at.count));
    return TileNeeds.ZERO;
  }

  static of(work: (source: NodeSource) => unknown): { level: number; index: number; entries: number }[] {
    const needs = new TileNeeds();
    work(needs);
    return [...needs.keys].map(([key, entries]) => {
      const [level, index] = key.split('/').map(Number);
      return { level, index, entries };
    });
  }
}

/** Tiles in memory, read as a node source, and grown by appending leaf hashes at the right edge. */
export class TileSet implements NodeSource {
  private readonly tiles = new Map<TileKey, Buffer>();
  private readonly expanded = new Map<TileKey, ExpandedTile>();
  /** Tiles changed by `append`, to be stored. */
  readonly changed = new Set<TileKey>();

  /** `expanded`: tiles whose inner hashes are known, for reading (a proof's; never appended to). */
  constructor(tiles: Tile[] = [], expanded: (Omit<Tile, 'hashes'> & { tile: ExpandedTile })[] = []) {
    for (const tile of tiles) this.tiles.set(tileKey(tile.level, tile.index), tile.hashes);
    for (const { level, index, tile } of expanded) {
      this.tiles.set(tileKey(level, index), tile.hashes);
      this.expanded.set(tileKey(level, index), tile);
    }
  }

  has(level: number, index: number): boolean {
    return this.tiles.has(tileKey(level, index));
  }

  add(tile: Tile): void {
    this.tiles.set(tileKey(tile.level, tile.index), tile.hashes);
  }

  node(level: number, index: number): Buffer {
    const at = locate(level, index);
    const tile = this.tiles.get(at.tile);
    if (!tile || tile.length < (at.first + at.count) * HASH)
      throw new Error(`tree hash ${level}/${index} is not stored (tile ${at.tile})`);
    const expanded = this.expanded.get(at.tile);
    return expanded ? expanded.root(at.first, at.count) : subtreeRoot(tile, at.first, at.count);
  }

  /** The entry count of tile level `t` in a tree of `size` leaves (complete subtrees of height 8t). */
  static entries(size: number, level: number): number {
    return Math.floor(size / TILE_WIDTH ** level);
  }

  /** The partial tiles at the right edge of a tree of `size` leaves: what appending needs loaded. */
  static edge(size: number): { level: number; index: number }[] {
    const edge: { level: number; index: number }[] = [];
    for (let level = 0; TileSet.entries(size, level) > 0; level++) {
      const entries = TileSet.entries(size, level);
      if (entries % TILE_WIDTH) edge.push({ level, index: Math.floor(entries / TILE_WIDTH) });
    }
    return edge;
  }

  /**
   * Appends leaf hashes to a tree of `size` leaves whose edge tiles are loaded; returns the new size.
   * A tile that fills up adds its root (a subtree of height 8 more) to the tile level above.
   */
  append(size: number, leafHashes: Buffer[]): number {
    for (let i = 0; i < leafHashes.length;) {
      const index = Math.floor(size / TILE_WIDTH);
      const take = Math.min(TILE_WIDTH - (size % TILE_WIDTH), leafHashes.length - i);
      const tile = this.extend(0, index, leafHashes.slice(i, i + take));
      i += take;
      size += take;
      if (tile.length === TILE_WIDTH * HASH) this.carry(1, index, subtreeRoot(tile, 0, TILE_WIDTH));
    }
    return size;
  }

  /** Adds the root of a full tile below as entry `position` of tile level `level`, carrying further up. */
  private carry(level: number, position: number, hash: Buffer): void {
    const index = Math.floor(position / TILE_WIDTH);
    const tile = this.extend(level, index, [hash]);
    if (tile.length === TILE_WIDTH * HASH) this.carry(level + 1, index, subtreeRoot(tile, 0, TILE_WIDTH));
  }

  private extend(level: number, index: number, hashes: Buffer[]): Buffer {
    const key = tileKey(level, index);
    const tile = Buffer.concat([this.tiles.get(key) ?? Buffer.alloc(0), ...hashes]);
    this.tiles.set(key, tile);
    this.changed.add(key);
    return tile;
  }

  /** The tiles changed since they were loaded. */
  changedTiles(): Tile[] {
    return [...this.changed].map((key) => {
      const [level, index] = key.split('/').map(Number);
      return { level, index, hashes: this.tiles.get(key)! };
    });
  }
}
