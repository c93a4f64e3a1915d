import { randomBytes } from 'node:crypto';
import { auditStack, MASTER_V2, writeAuditRows, type AuditStack } from '../../../test/support/audit-stack';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { signNote } from './tree/signed-note';

/**
 * `vault logs verify` on the real SQL: an intact log verifies; a row altered, deleted or moved, a
 * checkpoint whose signature or root is wrong, and rows removed before their retention period are each
 * reported where they are; a checkpoint kept outside the service is checked against the log. Only the
 * service's own keys count.
 */
let db: ServiceDatabase;
let audit: AuditStack;
const DAY = 86_400_000;

beforeAll(async () => {
  db = await openServiceDatabase();
  audit = auditStack(db);
});
afterAll(() => db.close());

/**
 * A tenant whose log holds `batches.length` checkpoints: each batch of rows is written, appended and
 * signed before the next; its id, its rows' ids in leaf order, and the notes signed.
 */
async function loggedTenant(
  ...batches: number[]
): Promise<{ tenantId: string; ids: string[]; notes: string[] }> {
  const tenantId = await db.newTenant();
  const ids: string[] = [];
  const notes: string[] = [];
  for (const n of batches) {
    ids.push(...(await writeAuditRows(db, tenantId, n)));
    await audit.checkpoint();
    notes.push((await audit.trees.checkpoint(tenantId))!.note);
  }
  return { tenantId, ids, notes };
}

/** Changes rows as a database superuser would, past the append-only trigger. */
const tamper = (sql: string, params: unknown[]) =>
  db.dataSource.transaction(async (manager) => {
    await manager.query('SET LOCAL session_replication_role = replica');
    await manager.query(sql, params);
  });

const problemsOf = async (tenant: string, checkpoint?: string) =>
  (await audit.verifier.verify({ tenant, checkpoint })).problems;

it('verifies an intact log: every row against its leaf, every checkpoint against the tree', async () => {
  const a = await loggedTenant(3, 4);
  const b = await loggedTenant(2);
  expect(await audit.verifier.verify({ tenant: a.tenantId })).toEqual({
    tenants_checked: 1,
    rows_checked: 7,
    checkpoints_checked: 2,
    problems: [],
  });
  const all = await audit.verifier.verify();
  expect(all.problems).toEqual([]);
  expect(all.tenants_checked).toBeGreaterThanOrEqual(2);
  expect(await problemsOf(b.tenantId, b.notes[0])).toEqual([]);
});

it('accepts a kept checkpoint with one extra newline (as `jq -r .note > file` writes it)', async () => {
  const { tenantId, notes } = await loggedTenant(2, 2);
  expect(await problemsOf(tenantId, `${notes[0]}\n`)).toEqual([]);
  expect(await problemsOf(tenantId, notes[1])).toEqual([]);
});

it('reports an altered row as its leaf, and the checkpoints over it as mismatched', async () => {
  const { tenantId, ids, notes } = await loggedTenant(3, 3);
  await tamper(`UPDATE audit_logs SET message = 'Token read' WHERE id = $1`, [ids[4]]);
  expect(await problemsOf(tenantId)).toEqual([
    { tenant_id: tenantId, problem: 'leaf_altered', leaf_index: 4, id: ids[4] },
    {
      tenant_id: tenantId,
      problem: 'checkpoint_root_mismatch',
      tree_size: 6,
      differing_leaves: { from: 3, to: 6 },
      leaf_index: 4,
      id: ids[4],
    },
  ]);
  // The kept checkpoint of 6 no longer matches; the one of 3 still does.
  expect(await problemsOf(tenantId, notes[1])).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ problem: 'kept_checkpoint_mismatch', tree_size: 6, leaf_index: 4 }),
    ]),
  );
  expect((await problemsOf(tenantId, notes[0])).map((p) => p.problem)).not.toContain(
    'kept_checkpoint_mismatch',
  );
});

it('reports a row deleted from the log (outside retention) as its leaf', async () => {
  const { tenantId, ids } = await loggedTenant(5);
  await db.rows('DELETE FROM audit_logs WHERE id = $1', [ids[2]]);
  expect(await problemsOf(tenantId)).toEqual(
    expect.arrayContaining([expect.objectContaining({ problem: 'leaf_deleted', leaf_index: 2, id: ids[2] })]),
  );
});

it('reports a checkpoint whose signature is not a key of this service', async () => {
  const { tenantId, notes } = await loggedTenant(2);
  const forged = signNote(notes[0].split('\n\n')[0] + '\n', audit.keys.name, randomBytes(32));
  await db.rows('UPDATE audit_checkpoints SET note = $2 WHERE tenant_id = $1', [tenantId, forged]);
  expect(await problemsOf(tenantId)).toEqual([
    { tenant_id: tenantId, problem: 'checkpoint_signature_invalid', tree_size: 2 },
  ]);
  // Kept outside, the forged note is refused before anything is read.
  expect(await problemsOf(tenantId, forged)).toEqual([
    {
      tenant_id: null,
      problem: 'kept_checkpoint_invalid',
      detail: 'no signature by a key of this service (its seed must open under a master key)',
    },
  ]);
});

it('refuses a kept checkpoint that is not a signed note as a file holds it', async () => {
  const { tenantId, notes } = await loggedTenant(1);
  const invalid = async (file: string) => (await problemsOf(tenantId, file))[0];
  expect(await invalid(notes[0].replace(/\n/g, '\r\n'))).toMatchObject({
    problem: 'kept_checkpoint_invalid',
  });
  expect(await invalid(notes[0].slice(0, -1))).toMatchObject({ problem: 'kept_checkpoint_invalid' });
  expect(await invalid(`${notes[0]}\n\n`)).toMatchObject({ problem: 'kept_checkpoint_invalid' });
  expect(await invalid('hello\n')).toMatchObject({ problem: 'kept_checkpoint_invalid' });
});

it('trusts no key whose seed does not open under its master keys', async () => {
  const { tenantId } = await loggedTenant(2);
  const stranger = auditStack(db, { ring: [MASTER_V2], clock: audit.clock });
  expect((await stranger.verifier.verify({ tenant: tenantId })).problems).toEqual([
    { tenant_id: tenantId, problem: 'checkpoint_signature_invalid', tree_size: 2 },
  ]);
});

it('reports rows removed from the start of the log within their retention period', async () => {
  const { tenantId, ids } = await loggedTenant(3, 3, 3);
  // The first six rows go, with their leaves, as retention would take them: but they are days old.
  await db.rows('DELETE FROM audit_leaves WHERE tenant_id = $1 AND leaf_index < 6', [tenantId]);
  await db.rows('DELETE FROM audit_logs WHERE id = ANY($1)', [ids.slice(0, 6)]);
  await db.rows('UPDATE audit_trees SET retained_from = 6 WHERE tenant_id = $1', [tenantId]);
  // The checkpoint of 3 was signed minutes ago: leaves 3 to 5, written after it, are far from their end.
  expect(await problemsOf(tenantId)).toEqual([
    {
      tenant_id: tenantId,
      problem: 'leaf_deleted_within_retention',
      leaf_index: 3,
      tree_size: 3,
      removed_leaves: { from: 3, to: 6 },
      detail: expect.stringContaining('leaves 3 to 5 were written after it') as string,
    },
  ]);
});

it('accepts what retention removed once it was past LOG_RETENTION_DAYS, the tree keeping their hashes', async () => {
  const { tenantId, notes } = await loggedTenant(4, 4);
  audit.clock.advance((audit.config.LOG_RETENTION_DAYS + 35) * DAY);
  const cutoff = new Date(audit.clock.now().getTime() - audit.config.LOG_RETENTION_DAYS * DAY);
  const removed = await db.work.transaction({}, (change) => audit.trees.deleteRetained(change, cutoff));
  expect(removed).toBeGreaterThanOrEqual(8);
  expect(await db.rows('SELECT 1 FROM audit_logs WHERE tenant_id = $1', [tenantId])).toEqual([]);
  expect(await audit.verifier.verify({ tenant: tenantId })).toMatchObject({ rows_checked: 0, problems: [] });
  expect(await problemsOf(tenantId, notes[1])).toEqual([]);
});
