import request from 'supertest';
import { DataSource } from 'typeorm';
import { ClsService } from 'nestjs-cls';
import { AuditChainService, ChainReport } from '../src/common/audit/audit-chain.service';
import { newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { spawnTs } from './support/processes';
import { ignoreTimeout, waitFor } from './support/wait';

/** The audit log's hash chain: sealed shortly after commit, verified by `cli logs verify`. */
describe('tamper-evident audit log', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let chain: AuditChainService;

  beforeAll(async () => {
    t = await startApp();
    db = t.app.get(DataSource);
    chain = t.app.get(AuditChainService);
    tenant = await newTenant(t, 'chained');
    const app = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:create'],
    });
    for (let i = 0; i < 5; i++)
      await request(t.http).post('/tokenize').set('BT-API-KEY', app.key).send(['a', 'b', 'c']).expect(201);
  });
  afterAll(() => t.close());

  const inCls = <T>(work: () => Promise<T>) => t.app.get(ClsService).run(work);
  const sealAll = async () => {
    // The interval job may hold the tick; wait until every row of the tenant is sealed.
    await sealedAll(tenant.tenantId);
  };
  const sealedAll = (tenantId: string) =>
    waitFor(
      async () => {
        await inCls(() => chain.seal());
        const [{ n }] = await db.query(
          'SELECT count(*)::int AS n FROM audit_logs WHERE tenant_id = $1 AND seq IS NULL',
          [tenantId],
        );
        return n === 0;
      },
      { timeoutMs: 5000, intervalMs: 100, what: 'every row of the tenant to be sealed' },
    );
  const verify = (): Promise<ChainReport> => inCls(() => chain.verify(tenant.tenantId));
  /** What an attacker with database access does: change a row with the trigger bypassed. */
  const tamper = (sql: string, params: unknown[]) =>
    db.transaction(async (m) => {
      await m.query('SET LOCAL session_replication_role = replica');
      await m.query(sql, params);
    });
  const rowAt = async (seq: number) =>
    (
      await db.query('SELECT id, message FROM audit_logs WHERE tenant_id = $1 AND seq = $2', [
        tenant.tenantId,
        seq,
      ])
    )[0] as {
      id: string;
      message: string;
    };

  it('seals every row into one chain that verifies', async () => {
    await sealAll();
    const report = await verify();
    expect(report).toEqual({ tenants_checked: 1, rows_checked: expect.any(Number), problems: [] });
    const [{ n }] = await db.query('SELECT count(*)::int AS n FROM audit_logs WHERE tenant_id = $1', [
      tenant.tenantId,
    ]);
    expect(report.rows_checked).toBe(n);
    expect(n).toBeGreaterThanOrEqual(17);
  });

  it('refuses any update through the trigger, sealing included once done', async () => {
    const row = await rowAt(3);
    await expect(db.query(`UPDATE audit_logs SET message = 'x' WHERE id = $1`, [row.id])).rejects.toThrow(
      /cannot be updated/,
    );
    await expect(db.query(`UPDATE audit_logs SET seq = 999 WHERE id = $1`, [row.id])).rejects.toThrow(
      /cannot be updated/,
    );
  });

  it('reports the first altered row, and a deleted one, with the command line tool', async () => {
    const row = await rowAt(4);
    await tamper(`UPDATE audit_logs SET message = 'Nothing happened here' WHERE id = $1`, [row.id]);
    expect((await verify()).problems).toEqual([
      { tenant_id: tenant.tenantId, seq: 4, id: row.id, problem: 'altered' },
    ]);

    const cli = spawnTs('src/cli.ts', ['logs', 'verify', '--tenant', tenant.tenantId], {});
    expect(await cli.exited).toBe(1);
    expect(JSON.parse(cli.stdout())).toMatchObject({
      problems: [{ tenant_id: tenant.tenantId, seq: 4, id: row.id, problem: 'altered' }],
    });

    await tamper(`UPDATE audit_logs SET message = $2 WHERE id = $1`, [row.id, row.message]);
    expect((await verify()).problems).toEqual([]);

    const victim = await rowAt(7);
    await db.query('DELETE FROM audit_logs WHERE id = $1', [victim.id]);
    expect((await verify()).problems).toEqual([
      { tenant_id: tenant.tenantId, seq: 7, id: null, problem: 'deleted' },
    ]);
  });

  it("a row's token type is sealed with it: changed, or set on a row without one, it is reported", async () => {
    const typed: { id: string; seq: string }[] = await db.query(
      `SELECT id, seq FROM audit_logs WHERE tenant_id = $1 AND token_type = 'token' AND seq IS NOT NULL ORDER BY seq LIMIT 1`,
      [tenant.tenantId],
    );
    expect(typed).toHaveLength(1);
    await expect(
      db.query(`UPDATE audit_logs SET token_type = 'card' WHERE id = $1`, [typed[0].id]),
    ).rejects.toThrow(/cannot be updated/);
    await tamper(`UPDATE audit_logs SET token_type = 'card' WHERE id = $1`, [typed[0].id]);
    expect((await verify()).problems).toContainEqual({
      tenant_id: tenant.tenantId,
      seq: Number(typed[0].seq),
      id: typed[0].id,
      problem: 'altered',
    });
    await tamper(`UPDATE audit_logs SET token_type = 'token' WHERE id = $1`, [typed[0].id]);
  });

  it('notices a deleted tail through the chain head', async () => {
    const other = await newTenant(t, 'tail');
    const mgmt = other.managementKey;
    await request(t.http).get('/tenants/self').set('BT-API-KEY', mgmt).expect(200);
    await sealedAll(other.tenantId).catch(ignoreTimeout);
    expect((await inCls(() => chain.verify(other.tenantId))).problems).toEqual([]);
    await db.query(
      'DELETE FROM audit_logs WHERE tenant_id = $1 AND seq = (SELECT max(seq) FROM audit_logs WHERE tenant_id = $1)',
      [other.tenantId],
    );
    expect((await inCls(() => chain.verify(other.tenantId))).problems).toEqual([
      { tenant_id: other.tenantId, seq: expect.any(Number), id: null, problem: 'head_mismatch' },
    ]);
  });
});
