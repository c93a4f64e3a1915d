import {
  auditStack,
  leafHashesOfRows,
  rootOf,
  writeAuditRows,
  type AuditStack,
} from '../../../test/support/audit-stack';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { TILE_WIDTH } from './tree/tiles';

/** The standalone verifier a tenant runs (examples/verify-audit): the proofs are checked as it checks them. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const independent = require('../../../examples/verify-audit/verify-audit') as {
  verifyInclusion(hash: Buffer, index: number, size: number, path: Buffer[], root: Buffer): boolean;
  verifyConsistency(
    first: number,
    second: number,
    firstRoot: Buffer,
    secondRoot: Buffer,
    path: Buffer[],
  ): boolean;
};

/**
 * Proofs from the tiles the checkpointer stored on the real SQL: every inclusion and consistency proof
 * verifies, with the independent verifier, against the root of the tree the rows give, across tile
 * boundaries, and stays right as the tree grows past the tiles kept in memory. A tenant's proofs come from
 * its own tree only.
 */
let db: ServiceDatabase;
let audit: AuditStack;
let tenant: string;
let other: string;
/** The tenant's leaf hashes, in leaf order. */
let leaves: Buffer[];

beforeAll(async () => {
  db = await openServiceDatabase();
  audit = auditStack(db);
  tenant = await db.newTenant('mine');
  other = await db.newTenant('other');
  // More than a tile of leaves: proofs cross from full tiles into the partial one at the edge.
  await writeAuditRows(db, tenant, TILE_WIDTH + 44);
  await writeAuditRows(db, other, 7);
  await audit.checkpoint();
  leaves = await leafHashesOfRows(db, tenant);
});
afterAll(() => db.close());

const SIZES = [1, 2, 3, 7, 8, 255, 256, 257, 300];

it('proves every leaf included in trees of several sizes, within a tile and across tiles', async () => {
  expect(leaves).toHaveLength(300);
  for (const size of SIZES) {
    const root = rootOf(leaves, size)!;
    for (const index of new Set([0, 1, size >> 1, size - 2, size - 1].filter((i) => i >= 0 && i < size))) {
      const path = await audit.proofs.inclusion(tenant, index, size);
      expect(independent.verifyInclusion(leaves[index], index, size, path, root)).toBe(true);
      // The path proves that leaf there, nothing else.
      if (size > 1)
        expect(independent.verifyInclusion(leaves[(index + 1) % size], index, size, path, root)).toBe(false);
    }
  }
});

it('proves each smaller tree a prefix of each larger one', async () => {
  for (const first of SIZES)
    for (const second of SIZES.filter((s) => s > first)) {
      const path = await audit.proofs.consistency(tenant, first, second);
      expect(
        independent.verifyConsistency(first, second, rootOf(leaves, first)!, rootOf(leaves, second)!, path),
      ).toBe(true);
    }
});

it('stays right as the tree grows: the partial tiles kept in memory are read again when a proof needs more', async () => {
  // Proofs at 300 kept the edge tiles of 300 leaves in memory.
  await audit.proofs.inclusion(tenant, 299, 300);
  await writeAuditRows(db, tenant, 20);
  await audit.checkpoint();
  const grown = await leafHashesOfRows(db, tenant);
  expect(grown).toHaveLength(320);
  const path = await audit.proofs.inclusion(tenant, 310, 320);
  expect(independent.verifyInclusion(grown[310], 310, 320, path, rootOf(grown)!)).toBe(true);
  const consistency = await audit.proofs.consistency(tenant, 300, 320);
  expect(independent.verifyConsistency(300, 320, rootOf(grown, 300)!, rootOf(grown)!, consistency)).toBe(
    true,
  );
  // And an older, smaller tree is still proved from the same tiles.
  const old = await audit.proofs.inclusion(tenant, 5, 8);
  expect(independent.verifyInclusion(grown[5], 5, 8, old, rootOf(grown, 8)!)).toBe(true);
});

it("proves from the tenant's own tree: another tenant's leaf at the same index is not in it", async () => {
  const theirs = await leafHashesOfRows(db, other);
  const path = await audit.proofs.inclusion(other, 3, 7);
  expect(independent.verifyInclusion(theirs[3], 3, 7, path, rootOf(theirs)!)).toBe(true);
  expect(independent.verifyInclusion(leaves[3], 3, 7, path, rootOf(theirs)!)).toBe(false);
  const mine = await audit.proofs.inclusion(tenant, 3, 7);
  expect(mine.map((h) => h.toString('hex'))).not.toEqual(path.map((h) => h.toString('hex')));
});

it("fails for a tenant without a tree rather than prove from another tenant's tiles", async () => {
  const empty = await db.newTenant('empty');
  await expect(audit.proofs.inclusion(empty, 0, 2)).rejects.toThrow();
  await expect(audit.proofs.consistency(empty, 1, 7)).rejects.toThrow();
});
