import { randomUUID } from 'node:crypto';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import type { ChainRow } from './audit-chain.repository';
import { AuditChainRepository } from './audit-chain.repository';
import { AuditChainService, rowHash } from './audit-chain.service';

/**
 * The old hash chain on the real SQL: rows sealed into a chain per tenant (as the chain job sealed them
 * before the tree) verify, and each kind of tampering is reported where it happened: an altered row, a
 * row deleted from the middle or the end, rows out of order. Retention's deletion of the oldest rows is not
 * tampering.
 */
let db: ServiceDatabase;
let chain: AuditChainService;

beforeAll(async () => {
  db = await openServiceDatabase();
  chain = new AuditChainService(new AuditChainRepository(db.dataSource));
});
afterAll(() => db.close());

/** `created_at` as the chain hashes it (cursorTimeSql: microseconds, UTC). */
const createdText = (at: Date) => at.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/**
 * A new tenant whose `n` rows are sealed into a chain, with its head, as the chain job left them (the
 * rows of the old chain are inserted sealed: the table refuses updates); its id and the rows' ids.
 */
async function sealedTenant(n: number): Promise<{ tenantId: string; ids: string[] }> {
  const tenantId = await db.newTenant();
  const ids: string[] = [];
  let prev: Buffer = Buffer.alloc(32);
  for (let seq = 1; seq <= n; seq++) {
    const at = new Date(Date.UTC(2025, 0, 1, 0, 0, seq, 123));
    const row: ChainRow = {
      id: randomUUID(),
      tenant_id: tenantId,
      actor_id: null,
      actor_type: 'application',
      entity_type: 'token',
      entity_id: `tok_${seq}`,
      operation: 'create',
      message: `Token created ${seq}`,
      token_type: seq % 2 ? 'card' : null,
      created_text: createdText(at),
    } as ChainRow;
    const hash = rowHash(row, seq, prev);
    await db.rows(
      `INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message,
                               token_type, created_at, seq, prev_hash, hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        row.id,
        tenantId,
        row.actor_id,
        row.actor_type,
        row.entity_type,
        row.entity_id,
        row.operation,
        row.message,
        row.token_type,
        at,
        seq,
        prev,
        hash,
      ],
    );
    ids.push(row.id);
    prev = hash;
  }
  await db.rows('INSERT INTO audit_chain_heads (tenant_id, seq, hash) VALUES ($1, $2, $3)', [
    tenantId,
    n,
    prev,
  ]);
  return { tenantId, ids };
}

/** Changes rows as a database superuser would, past the append-only trigger. */
const tamper = (sql: string, params: unknown[]) =>
  db.dataSource.transaction(async (manager) => {
    await manager.query('SET LOCAL session_replication_role = replica');
    await manager.query(sql, params);
  });

it("verifies every tenant's intact chain, row by row", async () => {
  const a = await sealedTenant(4);
  const b = await sealedTenant(3);
  expect(await chain.verify()).toEqual({ tenants_checked: 2, rows_checked: 7, problems: [] });
  expect(await chain.verify(a.tenantId)).toEqual({ tenants_checked: 1, rows_checked: 4, problems: [] });
  expect(await chain.verify(b.tenantId)).toEqual({ tenants_checked: 1, rows_checked: 3, problems: [] });
});

it('ignores rows written after the chain (they are in the tree), and tenants without a chain', async () => {
  const { tenantId } = await sealedTenant(2);
  await db.work.transaction({ actor: { tenantId, applicationId: null, system: true } }, async (change) =>
    change.audit({ entityType: 'token', entityId: 'tok_new', operation: 'read', message: 'Token read' }),
  );
  await db.newTenant('no chain');
  expect(await chain.verify(tenantId)).toEqual({ tenants_checked: 1, rows_checked: 2, problems: [] });
});

it('reports an altered row at its place', async () => {
  const { tenantId, ids } = await sealedTenant(4);
  await tamper(`UPDATE audit_logs SET message = 'Token read' WHERE id = $1`, [ids[2]]);
  expect((await chain.verify(tenantId)).problems).toEqual([
    { tenant_id: tenantId, seq: 3, id: ids[2], problem: 'altered' },
  ]);
});

it('reports a row deleted from the middle as the gap it leaves', async () => {
  const { tenantId } = await sealedTenant(5);
  await db.rows('DELETE FROM audit_logs WHERE tenant_id = $1 AND seq = 3', [tenantId]);
  expect((await chain.verify(tenantId)).problems).toEqual([
    { tenant_id: tenantId, seq: 3, id: null, problem: 'deleted' },
  ]);
});

it('reports rows deleted from the end against the head', async () => {
  const { tenantId } = await sealedTenant(5);
  await db.rows('DELETE FROM audit_logs WHERE tenant_id = $1 AND seq >= 4', [tenantId]);
  expect((await chain.verify(tenantId)).problems).toEqual([
    { tenant_id: tenantId, seq: 4, id: null, problem: 'head_mismatch' },
  ]);
});

it('reports rows swapped in the chain', async () => {
  const { tenantId, ids } = await sealedTenant(4);
  await tamper('UPDATE audit_logs SET seq = -seq WHERE id = ANY($1)', [[ids[1], ids[2]]]);
  await tamper('UPDATE audit_logs SET seq = CASE WHEN id = $1 THEN 3 ELSE 2 END WHERE id = ANY($2)', [
    ids[1],
    [ids[1], ids[2]],
  ]);
  expect((await chain.verify(tenantId)).problems).toEqual([
    { tenant_id: tenantId, seq: 2, id: ids[2], problem: 'reordered' },
  ]);
});

it('takes the oldest remaining row as the anchor: retention deleting the first rows is not tampering', async () => {
  const { tenantId } = await sealedTenant(5);
  await db.rows('DELETE FROM audit_logs WHERE tenant_id = $1 AND seq <= 2', [tenantId]);
  expect(await chain.verify(tenantId)).toEqual({ tenants_checked: 1, rows_checked: 3, problems: [] });
});
