import { Injectable } from '@nestjs/common';
import { AuditTreeRepository } from './audit-tree.repository';
import { consistencyPath, inclusionPath, type NodeSource } from './tree/merkle';
import { TileNeeds, TileSet } from './tree/tiles';

/**
 * Proofs from a tenant's stored tiles: the hashes a proof needs are worked out first, their tiles read in
 * one query, then the proof computed (a few dozen hashes at a million leaves).
 */
@Injectable()
export class AuditProofs {
  constructor(private readonly trees: AuditTreeRepository) {}

  inclusion(tenantId: string, leafIndex: number, treeSize: number): Promise<Buffer[]> {
    return this.fromTiles(tenantId, (source) => inclusionPath(source, leafIndex, treeSize));
  }

  consistency(tenantId: string, first: number, second: number): Promise<Buffer[]> {
    return this.fromTiles(tenantId, (source) => consistencyPath(source, first, second));
  }

  private async fromTiles(tenantId: string, proof: (source: NodeSource) => Buffer[]): Promise<Buffer[]> {
    const tiles = await this.trees.tiles(tenantId, TileNeeds.of(proof));
    return proof(new TileSet(tiles));
  }
}
