import { Logger } from '@nestjs/common';
import {
  auditStack,
  leafHashesOfRows,
  rootOf,
  writeAuditRows,
  type AuditStack,
} from '../../../test/support/audit-stack';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { noteSignedBy, parseCheckpoint, parseNote } from './tree/signed-note';

/**
 * The checkpointer on the real SQL: committed audit rows become leaves of their tenant's tree, in one
 * transaction per batch, and a tree grown for a checkpoint period gets a checkpoint signed by the
 * service's key, reported to the tenant's webhooks. It writes no audit row of its own.
 */
let db: ServiceDatabase;
let audit: AuditStack;
let tenant: string;
let other: string;

beforeAll(async () => {
  db = await openServiceDatabase();
  audit = auditStack(db);
  tenant = await db.newTenant('mine');
  other = await db.newTenant('other');
  await db.subscribe(tenant);
});
afterAll(() => db.close());
afterEach(() => jest.restoreAllMocks());

/** The root of the tenant's tree as its rows give it, over its first `size` leaves. */
const rootOfRows = async (tenantId: string, size: number) =>
  rootOf(await leafHashesOfRows(db, tenantId), size);

const treeOf = async (tenantId: string) =>
  (await audit.trees.tree(tenantId)) ?? { size: 0, checkpointSize: 0 };
const auditRowCount = async () =>
  Number((await db.rows<{ n: string }>('SELECT count(*) AS n FROM audit_logs'))[0].n);

it('appends nothing and signs nothing while no row has been written', async () => {
  expect(await audit.checkpoint()).toBe(0);
  expect(await db.rows('SELECT 1 FROM audit_checkpoints')).toEqual([]);
});

it("appends each tenant's committed rows to its own tree, in the order written, and signs a checkpoint of each", async () => {
  const mine = await writeAuditRows(db, tenant, 3);
  const theirs = await writeAuditRows(db, other, 2);
  expect(await audit.checkpoint()).toBe(5);

  const leaves = await db.rows<{ tenant_id: string; row_id: string; leaf_index: string }>(
    'SELECT tenant_id, row_id, leaf_index::text FROM audit_leaves ORDER BY tenant_id, leaf_index',
  );
  expect(leaves.filter((l) => l.tenant_id === tenant).map((l) => l.row_id)).toEqual(mine);
  expect(leaves.filter((l) => l.tenant_id === other).map((l) => l.row_id)).toEqual(theirs);
  expect(leaves.filter((l) => l.tenant_id === tenant).map((l) => l.leaf_index)).toEqual(['0', '1', '2']);

  for (const [tenantId, size] of [
    [tenant, 3],
    [other, 2],
  ] as const) {
    const checkpoint = await audit.trees.checkpoint(tenantId);
    expect(checkpoint).toMatchObject({ treeSize: size, createdAt: audit.clock.now() });
    expect(checkpoint!.rootHash.equals((await rootOfRows(tenantId, size))!)).toBe(true);
    // The note is signed by a key this service vouches for, and says what the row says.
    const body = parseCheckpoint(parseNote(checkpoint!.note)!.text)!;
    expect(body).toMatchObject({ origin: `vault.example:8443/audit/${tenantId}`, treeSize: size });
    expect(body.rootHash.equals(checkpoint!.rootHash)).toBe(true);
    const trusted = await audit.keys.trusted();
    expect(trusted.some((key) => noteSignedBy(checkpoint!.note, key))).toBe(true);
  }
});

it("reports the checkpoint to the tenant's webhooks (audit:checkpoint), and writes no audit row", async () => {
  await writeAuditRows(db, tenant, 1);
  const before = await auditRowCount();
  const events = () =>
    db.rows<{ data: { tree_size: number; note: string; origin: string } }>(
      "SELECT data FROM webhook_events WHERE tenant_id = $1 AND type = 'audit:checkpoint' ORDER BY created_at",
      [tenant],
    );
  const already = (await events()).length;
  await audit.checkpoint();
  expect(await auditRowCount()).toBe(before);
  const reported = (await events()).slice(already);
  expect(reported).toHaveLength(1);
  const latest = await audit.trees.checkpoint(tenant);
  expect(reported[0].data).toMatchObject({
    origin: `vault.example:8443/audit/${tenant}`,
    tree_size: latest!.treeSize,
    note: latest!.note,
  });
});

it('appends at once but signs again only a checkpoint period after the last checkpoint', async () => {
  const signed = (await treeOf(tenant)).checkpointSize;
  await writeAuditRows(db, tenant, 2);
  audit.clock.advance(audit.config.AUDIT_CHECKPOINT_SECONDS * 1000 - 1);
  expect(await audit.checkpointer.run()).toBe(2);
  expect(await treeOf(tenant)).toMatchObject({ size: signed + 2, checkpointSize: signed });
  audit.clock.advance(1);
  expect(await audit.checkpointer.run()).toBe(0);
  expect(await treeOf(tenant)).toMatchObject({ size: signed + 2, checkpointSize: signed + 2 });
});

it('signs nothing for a tree that has not grown', async () => {
  const before = await db.rows('SELECT tenant_id, tree_size FROM audit_checkpoints');
  await audit.checkpoint();
  expect(await db.rows('SELECT tenant_id, tree_size FROM audit_checkpoints')).toEqual(before);
});

it('runs a tick once per period: a second instance firing in the same second does nothing', async () => {
  await writeAuditRows(db, other, 1);
  audit.clock.advance(audit.config.AUDIT_CHECKPOINT_SECONDS * 1000);
  const secondInstance = auditStack(db, { clock: audit.clock });
  expect(await audit.checkpointer.run({ tickMs: 1_000 })).toBe(1);
  expect(await secondInstance.checkpointer.run({ tickMs: 1_000 })).toBeUndefined();
  audit.clock.advance(1_000);
  expect(await secondInstance.checkpointer.run({ tickMs: 1_000 })).toBe(0);
});

it('leaves nothing half-appended when a batch fails: the next run appends the rows', async () => {
  const ids = await writeAuditRows(db, tenant, 2);
  const size = (await treeOf(tenant)).size;
  const cursor = await db.rows('SELECT written, pos FROM audit_tree_cursor');
  // The batch writes its leaves, tiles, sizes and cursor, then fails before it commits.
  const append = audit.trees.append.bind(audit.trees);
  jest.spyOn(audit.trees, 'append').mockImplementationOnce(async (...args) => {
    await append(...args);
    throw new Error('the batch failed after writing');
  });
  // The job runner logs the failure; the spec says what failed.
  const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  expect(await audit.checkpoint()).toBeUndefined();
  expect(logged).toHaveBeenCalledWith(
    expect.objectContaining({ job: 'audit-checkpoint' }),
    'job audit-checkpoint failed',
  );
  expect(await db.rows('SELECT written, pos FROM audit_tree_cursor')).toEqual(cursor);
  expect(await db.rows('SELECT 1 FROM audit_leaves WHERE row_id = ANY($1)', [ids])).toEqual([]);
  expect((await treeOf(tenant)).size).toBe(size);
  jest.restoreAllMocks();
  expect(await audit.checkpoint()).toBe(2);
  expect((await treeOf(tenant)).size).toBe(size + 2);
  const latest = await audit.trees.checkpoint(tenant);
  expect(latest!.rootHash.equals((await rootOfRows(tenant, size + 2))!)).toBe(true);
});
