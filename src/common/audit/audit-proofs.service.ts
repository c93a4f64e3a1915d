import { Injectable } from '@nestjs/common';
import { AuditTreeRepository } from './audit-tree.repository';
import { consistencyPath, inclusionPath, type NodeSource } from './tree/merkle';
import { TILE_WIDTH, TileNeeds, TileSet, type Tile } from './tree/tiles';

/** Full tiles kept in memory: 4,096 of 8 KiB (32 MiB), the least recently used going first. */
const CACHED_TILES = 4_096;

/**
 * Proofs from a tenant's stored tiles: the hashes a proof needs are worked out first, the tiles that hold
 * them read in one query, then the proof computed (a few dozen hashes at a million leaves). A full tile
 * never changes, so full tiles are kept in memory and read once; the partial ones at the tree's right
 * edge are read each time.
 */
@Injectable()
export class AuditProofs {
  private readonly cache = new Map<string, Buffer>();

  constructor(private readonly trees: AuditTreeRepository) {}

  inclusion(tenantId: string, leafIndex: number, treeSize: number): Promise<Buffer[]> {
    return this.fromTiles(tenantId, (source) => inclusionPath(source, leafIndex, treeSize));
  }

  consistency(tenantId: string, first: number, second: number): Promise<Buffer[]> {
    return this.fromTiles(tenantId, (source) => consistencyPath(source, first, second));
  }

  private async fromTiles(tenantId: string, proof: (source: NodeSource) => Buffer[]): Promise<Buffer[]> {
    const tiles: Tile[] = [];
    const missing: { level: number; index: number }[] = [];
    for (const needed of TileNeeds.of(proof)) {
      const key = `${tenantId}/${needed.level}/${needed.index}`;
      const cached = this.cache.get(key);
      if (cached) {
        this.cache.delete(key);
        this.cache.set(key, cached);
        tiles.push({ ...needed, hashes: cached });
      } else missing.push(needed);
    }
    for (const tile of missing.length ? await this.trees.tiles(tenantId, missing) : []) {
      tiles.push(tile);
      if (tile.hashes.length < TILE_WIDTH * 32) continue;
      this.cache.set(`${tenantId}/${tile.level}/${tile.index}`, tile.hashes);
      if (this.cache.size > CACHED_TILES) this.cache.delete(this.cache.keys().next().value!);
    }
    return proof(new TileSet(tiles));
  }
}
