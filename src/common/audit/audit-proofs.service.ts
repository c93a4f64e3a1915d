import { Injectable } from '@nestjs/common';
import { AuditTreeRepository } from './audit-tree.repository';
import { consistencyPath, inclusionPath, type NodeSource } from './tree/merkle';
import { ExpandedTile, TileNeeds, TileSet } from './tree/tiles';

/**
 * Tiles kept in memory, each with its inner hashes: 4,096 of at most 16 KiB (64 MiB), the least recently
 * used going first.
 */
const CACHED_TILES = 4_096;

/**
 * Proofs from a tenant's stored tiles: the tiles a proof needs (and how many entries of each) are worked
 * out first, those not kept in memory read in one query, then the proof computed. A tile's entries never
 * change (it only grows at its end), so tiles are kept in memory expanded (the hashes of every subtree
 * inside them, computed once: where a proof through a tile would hash up to 247 of them each time, it
 * looks them up). A kept tile serves every proof that needs no more entries than it holds; the partial
 * tiles at the tree's right edge are read again when a proof of a larger tree needs more.
 */
@Injectable()
export class AuditProofs {
  private readonly cache = new Map<string, ExpandedTile>();

  constructor(private readonly trees: AuditTreeRepository) {}

  inclusion(tenantId: string, leafIndex: number, treeSize: number): Promise<Buffer[]> {
    return this.fromTiles(tenantId, (source) => inclusionPath(source, leafIndex, treeSize));
  }

  consistency(tenantId: string, first: number, second: number): Promise<Buffer[]> {
    return this.fromTiles(tenantId, (source) => consistencyPath(source, first, second));
  }

  private async fromTiles(tenantId: string, proof: (source: NodeSource) => Buffer[]): Promise<Buffer[]> {
    const kept: { level: number; index: number; tile: ExpandedTile }[] = [];
    const missing: { level: number; index: number }[] = [];
    for (const { level, index, entries } of TileNeeds.of(proof)) {
      const key = `${tenantId}/${level}/${index}`;
      const cached = this.cache.get(key);
      if (cached && cached.entries >= entries) {
        this.cache.delete(key);
        this.cache.set(key, cached);
        kept.push({ level, index, tile: cached });
      } else missing.push({ level, index });
    }
    for (const tile of missing.length ? await this.trees.tiles(tenantId, missing) : []) {
      const expanded = new ExpandedTile(tile.hashes);
      kept.push({ level: tile.level, index: tile.index, tile: expanded });
      const key = `${tenantId}/${tile.level}/${tile.index}`;
      this.cache.delete(key);
      this.cache.set(key, expanded);
      if (this.cache.size > CACHED_TILES) this.cache.delete(this.cache.keys().next().value!);
    }
    return proof(new TileSet([], kept));
  }
}
