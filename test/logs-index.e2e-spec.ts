import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/load-config';
import { openDatabase } from '../src/database/data-source';
import { logPageQuery, type LogFilter } from '../src/common/audit/audit-log-reads.repository';
import { AuditTreeRepository } from '../src/common/audit/audit-tree.repository';
import { AuditChainRepository } from '../src/common/audit/audit-chain.repository';
import type { Change } from '../src/common/unit-of-work/change';
import { createDatabase, dropDatabase } from './support/test-database';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The SQL a repository method sends, and its parameters, without running it. */
async function captured(
  call: (db: DataSource, change: Change) => Promise<unknown>,
): Promise<{ sql: string; params: unknown[] }> {
  let sent: { sql: string; params: unknown[] } | undefined;
  const recorder = {
    query: async (sql: string, params: unknown[] = []) => {
      sent ??= { sql, params };
      return [];
    },
  };
  await call(recorder as unknown as DataSource, recorder as unknown as Change).catch(() => undefined);
  if (!sent) throw new Error('no statement sent');
  return sent;
}

/**
 * The log listing on a table of 1,000,000 rows: every page, first or deep, is an index range scan in
 * the index's order (no Sort node, no sequential scan), so its cost does not grow with the table. Every
 * index on `audit_logs` is here with the query it serves: each costs every INSERT on the request path.
 */
describe('audit log pages on 1,000,000 rows', () => {
  let name: string;
  let db: DataSource;
  const tenantId = randomUUID();
  const otherTenant = randomUUID();

  beforeAll(async () => {
    const created = await createDatabase('vault_test_logs');
    name = created.name;
    db = await openDatabase(loadConfig({ DATABASE_URL: created.url }));
    await db.query(
      `INSERT INTO tenants (id, name, created_at) VALUES ($1, 'big', now()), ($2, 'other', now())`,
      [tenantId, otherTenant],
    );
    // 900,000 rows for the tenant under test and 100,000 for another, spread over a year.
    await db.query(
      `INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at)
       SELECT gen_random_uuid(), CASE WHEN i % 10 = 0 THEN $2::uuid ELSE $1::uuid END, NULL, 'application',
              (ARRAY['token','application','session','tenant'])[1 + i % 4], gen_random_uuid()::text, 'read', 'Token read',
              now() - (i * interval '31 seconds')
         FROM generate_series(1, 1000000) AS i`,
      [tenantId, otherTenant],
    );
    await db.query('ANALYZE audit_logs');
  }, 300_000);

  afterAll(async () => {
    await db?.destroy();
    if (name) await dropDatabase(name);
  });

  async function plan(filter: LogFilter): Promise<PlanNode[]> {
    const { sql, params } = logPageQuery(filter, 21);
    const rows: { 'QUERY PLAN': { Plan: PlanNode }[] }[] = await db.query(
      `EXPLAIN (FORMAT JSON) ${sql}`,
      params,
    );
    return nodes(rows[0]['QUERY PLAN'][0].Plan);
  }

  const expectIndexScan = (planNodes: PlanNode[], index: string) => {
    const types = planNodes.map((n) => n['Node Type']);
    expect(types).not.toContain('Sort');
    expect(types).not.toContain('Seq Scan');
    expect(planNodes.some((n) => n['Index Name'] === index)).toBe(true);
  };

  it('has a million rows', async () => {
    expect((await db.query('SELECT count(*)::int AS n FROM audit_logs'))[0].n).toBe(1_000_000);
  });

  it('the first page scans the (tenant_id, created_at, id) index', async () => {
    expectIndexScan(await plan({ tenantId }), 'audit_logs_tenant_created_idx');
  });

  it('a page deep into the set seeks by the cursor in the same index', async () => {
    const [deep]: { id: string; created_at: string }[] = await db.query(
      `SELECT id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at
         FROM audit_logs WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC OFFSET 700000 LIMIT 1`,
      [tenantId],
    );
    const planNodes = await plan({ tenantId, before: { createdAt: deep.created_at, id: deep.id } });
    expectIndexScan(planNodes, 'audit_logs_tenant_created_idx');
    const { sql, params } = logPageQuery(
      { tenantId, before: { createdAt: deep.created_at, id: deep.id } },
      21,
    );
    const page: { id: string }[] = await db.query(sql, params);
    expect(page).toHaveLength(21);
    expect(page[0].id).not.toBe(deep.id);
    // For the record: the measured cost of the first and the deep page.
    for (const [label, filter] of [
      ['first page', { tenantId }],
      ['page after row 700,000', { tenantId, before: { createdAt: deep.created_at, id: deep.id } }],
    ] as const) {
      const q = logPageQuery(filter, 21);
      const analyzed: { 'QUERY PLAN': string }[] = await db.query(
        `EXPLAIN (ANALYZE, BUFFERS) ${q.sql}`,
        q.params,
      );
      const lines = analyzed.map((r) => r['QUERY PLAN']);
      const time = lines.find((l) => l.startsWith('Execution Time')) ?? '';
      const buffers = lines.find((l) => l.trim().startsWith('Buffers')) ?? '';
      process.stdout.write(`audit log ${label} on 1,000,000 rows: ${time}; ${buffers.trim()}\n`);
    }
  });

  it('has exactly the indexes these tests justify, each named with the query it serves', async () => {
    const indexes: { indexname: string }[] = await db.query(
      `SELECT indexname FROM pg_indexes WHERE tablename = 'audit_logs' ORDER BY indexname`,
    );
    expect(indexes.map((i) => i.indexname)).toEqual([
      'audit_logs_chain_idx', // the old chain's verification, in seq order; partial: rows since have no seq
      'audit_logs_pkey', // a row by id (GET /logs/{id}/proof), unique per tenant
      'audit_logs_tenant_created_idx', // GET /logs pages, unfiltered and by date
      'audit_logs_tenant_entity_created_idx', // GET /logs?entity_id=
      'audit_logs_tenant_type_created_idx', // GET /logs?entity_type=
      'audit_logs_written_pos_idx', // the checkpointer's next rows, retention's cut, verification's walk
    ]);
  });

  async function explained(
    label: string,
    q: { sql: string; params: unknown[] },
    index: string,
  ): Promise<void> {
    const planned: { 'QUERY PLAN': { Plan: PlanNode }[] }[] = await db.query(
      `EXPLAIN (FORMAT JSON) ${q.sql}`,
      q.params,
    );
    const planNodes = nodes(planned[0]['QUERY PLAN'][0].Plan);
    expect({ label, seqScan: planNodes.some((n) => n['Node Type'] === 'Seq Scan') }).toEqual({
      label,
      seqScan: false,
    });
    expect({ label, index: planNodes.some((n) => n['Index Name'] === index) }).toEqual({
      label,
      index: true,
    });
    const analyzed: { 'QUERY PLAN': string }[] = await db.query(
      `EXPLAIN (ANALYZE, BUFFERS) ${q.sql}`,
      q.params,
    );
    const time = analyzed.map((r) => r['QUERY PLAN']).find((l) => l.startsWith('Execution Time')) ?? '';
    process.stdout.write(`audit_logs on 1,000,000 rows, ${label} (${index}): ${time}\n`);
  }

  it('the tree and retention read through (written, pos), a proof finds its row by the primary key', async () => {
    const trees = (d: DataSource) => new AuditTreeRepository(d);
    const [middle]: { written: string; pos: string; id: string }[] = await db.query(
      'SELECT written::text, pos::text, id FROM audit_logs ORDER BY pos OFFSET 500000 LIMIT 1',
    );
    await explained(
      "the checkpointer's next 20,000 rows",
      await captured((d, change) =>
        trees(d).rowsToAppend(change, middle, String(Number(middle.written) + 1), 20_000),
      ),
      'audit_logs_written_pos_idx',
    );
    await explained(
      'a proof: the row and its leaf',
      await captured((d) => trees(d).rowWithLeaf(tenantId, middle.id)),
      'audit_logs_pkey',
    );
    await explained(
      "verification's walk, 5,000 rows at a time",
      await captured((d) =>
        trees(d).appendedRows(
          middle,
          { written: middle.written, pos: String(Number(middle.pos) + 10_000) },
          5_000,
        ),
      ),
      'audit_logs_written_pos_idx',
    );
    await explained(
      "the old chain's verification",
      await captured((d) => new AuditChainRepository(d).sealedRowsAfter(tenantId, 0, 5_000)),
      'audit_logs_chain_idx',
    );
  });

  it('entity type, entity id and date filters use their indexes', async () => {
    expectIndexScan(await plan({ tenantId, entityType: 'session' }), 'audit_logs_tenant_type_created_idx');
    expectIndexScan(await plan({ tenantId, entityId: randomUUID() }), 'audit_logs_tenant_entity_created_idx');
    const day = 86_400_000;
    const dated = await plan({
      tenantId,
      startDate: new Date(Date.now() - 200 * day).toISOString(),
      endDate: new Date(Date.now() - 100 * day).toISOString(),
    });
    expectIndexScan(dated, 'audit_logs_tenant_created_idx');
  });
});
