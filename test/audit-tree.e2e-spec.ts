import { SchedulerRegistry } from '@nestjs/schedule';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AuditCheckpointer } from '../src/common/audit/audit-checkpointer.service';
import { AuditVerifier, type AuditReport } from '../src/common/audit/audit-verifier.service';
import { Clock } from '../src/common/jobs/clock';
import { RetentionJob } from '../src/common/jobs/retention.job';
import { LOCK_KEYS } from '../src/database/data-source';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { spawnJs } from './support/processes';
import { createDatabase, dropDatabase } from './support/test-database';
import { waitFor } from './support/wait';

// The independent verifier: the standalone script a tenant runs, not the service's own functions.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const independent = require('../examples/verify-audit/verify-audit');

interface Log {
  id: string;
  tenant_id: string;
  created_at: string;
  message: string;
}
interface Checkpoint {
  origin: string;
  tree_size: number;
  root_hash: string;
  created_at: string;
  note: string;
}
interface StoredRow {
  id: string;
  written: string;
  pos: string;
}

const b64 = (value: string): Buffer => Buffer.from(value, 'base64');

/**
 * Each tenant's audit log is a Merkle tree with signed checkpoints: every proof the API gives is checked
 * with the standalone verifier of examples/verify-audit, and tampering as a database superuser is reported
 * by `logs verify --checkpoint`. The app runs on a database of its own with its scheduled jobs stopped,
 * so that checkpoints are made when the tests say (and no other test's rows share the leaf order).
 */
describe('the audit log as a verifiable tree', () => {
  let database: { name: string; url: string };
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let writer: string;
  let aged: TestTenant;
  let agedKey: string;
  let agedCheckpoint: Checkpoint;

  beforeAll(async () => {
    database = await createDatabase('vault_test_audit_tree');
    t = await startApp({
      DATABASE_URL: database.url,
      AUDIT_CHECKPOINT_SECONDS: '1',
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    });
    const scheduler = t.app.get(SchedulerRegistry);
    for (const name of scheduler.getIntervals()) scheduler.deleteInterval(name);
    db = t.app.get(DataSource);
    // A tenant whose first rows were written more than a year ago (first in the leaf order, as they
    // would be), with a checkpoint signed among them then, for retention.
    const clock = t.app.get(Clock);
    clock.advance(-400 * 86_400_000);
    try {
      aged = await newTenant(t, 'aged');
      agedKey = (
        await newApplication(t, aged.managementKey, { type: 'private', permissions: ['token:create'] })
      ).key;
      await write(17, agedKey);
      agedCheckpoint = await checkpoint(aged);
      await write(17, agedKey);
    } finally {
      clock.reset();
    }
    tenant = await newTenant(t, 'tree');
    writer = (
      await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:create'] })
    ).key;
    await write(5);
  });
  afterAll(async () => {
    await t?.close();
    if (database) await dropDatabase(database.name);
  });

  /** `n` tokenize requests of three tokens each: three audit rows each. */
  async function write(n: number, key = writer): Promise<void> {
    for (let i = 0; i < n; i++)
      await request(t.http).post('/tokenize').set('BT-API-KEY', key).send(['a', 'b', 'c']).expect(201);
  }

  /** Appends what has committed and signs the checkpoints due (a period later than the last). */
  async function checkpoint(who: TestTenant = tenant): Promise<Checkpoint> {
    t.app.get(Clock).advance(1_100);
    await t.app.get(AuditCheckpointer).run();
    return (await get('/logs/checkpoint', who.managementKey).expect(200)).body as Checkpoint;
  }

  const get = (path: string, key = tenant.managementKey) => request(t.http).get(path).set('BT-API-KEY', key);

  async function allLogs(key = tenant.managementKey): Promise<Log[]> {
    const logs: Log[] = [];
    let start: string | undefined;
    do {
      const page = await get(`/logs?size=100${start ? `&start=${start}` : ''}`, key).expect(200);
      logs.push(...page.body.data);
      start = page.body.pagination.after;
    } while (start);
    return logs;
  }

  async function verifierKey(): Promise<string> {
    const keys = (await get('/logs/checkpoint/keys').expect(200)).body as { verifier_key: string }[];
    return keys[keys.length - 1].verifier_key;
  }

  /** Checks a checkpoint's note with the independent verifier and answers its root. */
  async function rootOf(c: Checkpoint): Promise<Buffer> {
    const body = independent.verifyNote(c.note, await verifierKey());
    expect(body.origin).toBe(c.origin);
    expect(body.treeSize).toBe(c.tree_size);
    expect(Buffer.from(body.rootHash).toString('base64')).toBe(c.root_hash);
    return Buffer.from(body.rootHash);
  }

  async function expectProven(
    log: Log,
    c: Checkpoint,
    key = tenant.managementKey,
    root?: Buffer,
  ): Promise<void> {
    const res = await get(`/logs/${log.id}/proof${root ? `?tree_size=${c.tree_size}` : ''}`, key).expect(200);
    expect(res.body.log).toEqual(log);
    expect(res.body.tree_size).toBe(c.tree_size);
    const ok = independent.verifyInclusion(
      independent.logLeafHash(res.body.log),
      res.body.leaf_index,
      res.body.tree_size,
      (res.body.inclusion_path as string[]).map(b64),
      root ?? (await rootOf(c)),
    );
    expect({ id: log.id, ok }).toEqual({ id: log.id, ok: true });
  }

  /** While this holds the checkpointer's lock, no instance appends or signs. */
  async function withCheckpointsHeld<T>(work: () => Promise<T>): Promise<T> {
    const runner = db.createQueryRunner();
    await runner.connect();
    try {
      await runner.query('SELECT pg_advisory_lock($1)', [LOCK_KEYS.jobAuditCheckpoint]);
      return await work();
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [LOCK_KEYS.jobAuditCheckpoint]);
      await runner.release();
    }
  }

  it('signs a checkpoint as a C2SP signed note with an Ed25519 key listed with its verifier key', async () => {
    const c = await checkpoint();
    const host = new URL(process.env.PUBLIC_BASE_URL ?? 'http://localhost:3000').host;
    expect(c.origin).toBe(`${host}/audit/${tenant.tenantId}`);
    const [body, signature] = c.note.split('\n\n');
    // The C2SP tlog-checkpoint lines, then the extension line `time <seconds>`: when it was signed.
    expect(body).toBe(
      `${c.origin}\n${c.tree_size}\n${c.root_hash}\ntime ${Math.floor(Date.parse(c.created_at) / 1000)}`,
    );
    expect(independent.verifyNote(c.note, await verifierKey()).time).toBe(
      Math.floor(Date.parse(c.created_at) / 1000),
    );
    expect(signature).toMatch(new RegExp(`^\u2014 ${host}/audit [A-Za-z0-9+/]{91}=\n$`));
    const keys = (await get('/logs/checkpoint/keys').expect(200)).body;
    expect(keys).toEqual([
      {
        name: `${host}/audit`,
        key_id: expect.stringMatching(/^[0-9a-f]{8}$/),
        public_key: expect.any(String),
        verifier_key: expect.any(String),
        created_at: expect.any(String),
      },
    ]);
    expect(b64(keys[0].public_key)).toHaveLength(32);
    expect(keys[0].verifier_key).toBe(
      `${host}/audit+${keys[0].key_id}+${Buffer.concat([Buffer.from([1]), b64(keys[0].public_key)]).toString('base64')}`,
    );
    expect(Buffer.from(independent.keyHash(keys[0].name, b64(keys[0].public_key))).toString('hex')).toBe(
      keys[0].key_id,
    );
    await rootOf(c);
    // The tree holds every row of the tenant, and the root is the RFC 9162 root of their leaves.
    const logs = await allLogs();
    expect(c.tree_size).toBe(logs.length);
  });

  it('proves every row in the latest checkpoint, and each row by id as GET /logs shows it', async () => {
    const c = await checkpoint();
    for (const log of await allLogs()) await expectProven(log, c);
  });

  it('proves an old checkpoint a prefix of a newer one, and old rows in the old checkpoint', async () => {
    const first = await checkpoint();
    await write(4);
    const second = await checkpoint();
    expect(second.tree_size).toBe(first.tree_size + 12);
    const res = await get(`/logs/consistency?first=${first.tree_size}&second=${second.tree_size}`).expect(
      200,
    );
    expect(res.body).toEqual({
      first: first.tree_size,
      second: second.tree_size,
      consistency_path: expect.any(Array),
    });
    const ok = independent.verifyConsistency(
      first.tree_size,
      second.tree_size,
      await rootOf(first),
      await rootOf(second),
      res.body.consistency_path.map(b64),
    );
    expect(ok).toBe(true);
    const oldest = (await allLogs()).at(-1)!;
    await expectProven(oldest, first, tenant.managementKey, await rootOf(first));
  });

  it('appends rows while writes go on without a pause (transactions start between its reads)', async () => {
    const size = async () =>
      Number(
        (await db.query('SELECT size FROM audit_trees WHERE tenant_id = $1', [tenant.tenantId]))[0]?.size ??
          0,
      );
    const before = await size();
    let writing = true;
    const writers = Array.from({ length: 6 }, async () => {
      while (writing) await write(1);
    });
    try {
      // However long the writes take to commit on a loaded machine: the tree grows while they go on.
      await waitFor(
        async () => {
          await t.app.get(AuditCheckpointer).run();
          return (await size()) > before;
        },
        { timeoutMs: 30_000, intervalMs: 150, what: 'the tree to grow while writes go on' },
      );
    } finally {
      writing = false;
      await Promise.all(writers);
    }
  });

  it('answers 404 no_checkpoint before the first checkpoint, and 409 with Retry-After for a row not in one yet', async () => {
    await withCheckpointsHeld(async () => {
      const fresh = await newTenant(t, 'not yet');
      const res = await get('/logs/checkpoint', fresh.managementKey);
      expectProblem(res, 404);
      expect(res.body.code).toBe('no_checkpoint');
      await write(1);
      const newest = (await get('/logs?size=1').expect(200)).body.data[0] as Log;
      const refused = await get(`/logs/${newest.id}/proof`);
      expectProblem(refused, 409);
      expect(refused.body.code).toBe('not_yet_checkpointed');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    });
    const c = await checkpoint();
    await expectProven((await get('/logs?size=1').expect(200)).body.data[0], c);
  });

  it('refuses sizes that are not checkpoints, naming the parameter', async () => {
    const c = await checkpoint();
    const oldest = (await allLogs()).at(-1)!;
    const cases: [string, string][] = [
      [`/logs/${oldest.id}/proof?tree_size=${c.tree_size + 1}`, 'tree_size'],
      [`/logs/${oldest.id}/proof?tree_size=0`, 'tree_size'],
      [`/logs/${oldest.id}/proof?tree_size=x`, 'tree_size'],
      [`/logs/consistency?first=0&second=${c.tree_size}`, 'first'],
      [`/logs/consistency?first=${c.tree_size}&second=${c.tree_size}`, 'first'],
      [`/logs/consistency?first=1&second=${c.tree_size}`, 'first'],
      [`/logs/consistency?first=${c.tree_size}&second=${c.tree_size + 5}`, 'second'],
      [`/logs/consistency?second=${c.tree_size}`, 'first'],
    ];
    for (const [path, field] of cases) {
      const res = await get(path);
      expectProblem(res, 400);
      expect({ path, errors: Object.keys(res.body.errors ?? {}) }).toEqual({ path, errors: [field] });
    }
    const newest = (await allLogs())[0];
    const early = await db.query<{ tree_size: string }[]>(
      'SELECT tree_size FROM audit_checkpoints WHERE tenant_id = $1 ORDER BY tree_size LIMIT 1',
      [tenant.tenantId],
    );
    const res = await get(`/logs/${newest.id}/proof?tree_size=${early[0].tree_size}`);
    expectProblem(res, 400);
    expect(Object.keys(res.body.errors)).toEqual(['tree_size']);
    expectProblem(await get(`/logs/not-a-uuid/proof`), 404);
    expectProblem(await get(`/logs/00000000-0000-4000-8000-000000000000/proof`), 404);
  });

  it("another tenant sees neither the rows' proofs nor the checkpoints; keys without log:read see nothing", async () => {
    const c = await checkpoint();
    const other = await newTenant(t, 'other');
    await write(
      1,
      (await newApplication(t, other.managementKey, { type: 'private', permissions: ['token:create'] })).key,
    );
    const theirs = await checkpoint(other);
    expect(theirs.origin).toMatch(new RegExp(`/audit/${other.tenantId}$`));
    const mine = (await allLogs())[0];
    expectProblem(await get(`/logs/${mine.id}/proof`, other.managementKey), 404);
    const consistency = await get(`/logs/consistency?first=1&second=${c.tree_size}`, other.managementKey);
    expectProblem(consistency, 400);
    for (const path of [
      '/logs/checkpoint',
      '/logs/checkpoint/keys',
      `/logs/${mine.id}/proof`,
      '/logs/consistency?first=1&second=2',
    ])
      expectProblem(await get(path, writer), 403);
  });

  it('reading logs, checkpoints and proofs writes no audit row, and neither does a checkpoint', async () => {
    const count = async () =>
      Number(
        (await db.query('SELECT count(*) AS n FROM audit_logs WHERE tenant_id = $1', [tenant.tenantId]))[0].n,
      );
    await checkpoint();
    const before = await count();
    const c = await checkpoint();
    const logs = await allLogs();
    await get('/logs/checkpoint/keys').expect(200);
    await get(`/logs/${logs[0].id}/proof`).expect(200);
    await get(`/logs/consistency?first=1&second=${c.tree_size}`);
    await t.app.get(AuditCheckpointer).run();
    expect(await count()).toBe(before);
  });

  it('reports each checkpoint to webhooks subscribed to audit:checkpoint', async () => {
    const hook = await request(t.http)
      .post('/webhooks')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'checkpoints', url: 'http://127.0.0.1:9/hook', events: ['audit:checkpoint'] });
    expect(hook.status).toBe(201);
    await write(1);
    const c = await checkpoint();
    const [event]: { data: Checkpoint; entity_id: string }[] = await db.query(
      `SELECT data, entity_id FROM webhook_events WHERE tenant_id = $1 AND type = 'audit:checkpoint'
        ORDER BY created_at DESC LIMIT 1`,
      [tenant.tenantId],
    );
    expect(event.data).toEqual(c);
  });

  describe('tampering as a database superuser, against a checkpoint kept before', () => {
    let victim: TestTenant;
    let kept: Checkpoint;
    let keptFile: string;

    beforeAll(async () => {
      victim = await newTenant(t, 'victim');
      const key = (
        await newApplication(t, victim.managementKey, { type: 'private', permissions: ['token:create'] })
      ).key;
      await write(6, key);
      kept = await checkpoint(victim);
      keptFile = join(mkdtempSync(join(tmpdir(), 'kept-')), 'checkpoint.txt');
      writeFileSync(keptFile, kept.note);
    });

    const verify = (): Promise<AuditReport> => t.app.get(AuditVerifier).verify({ checkpoint: kept.note });
    const rows = async (): Promise<(StoredRow & { message: string })[]> =>
      db.query(
        'SELECT id, written::text, pos::text, message FROM audit_logs WHERE tenant_id = $1 ORDER BY written, pos',
        [victim.tenantId],
      );
    /** What an attacker with database access does: bypass the append-only trigger. */
    const tamper = (...statements: [string, unknown[]][]) =>
      db.transaction(async (m) => {
        await m.query('SET LOCAL session_replication_role = replica');
        for (const [sql, params] of statements) await m.query(sql, params);
      });

    it('verifies clean before any tampering', async () => {
      const report = await verify();
      expect(report.problems).toEqual([]);
      expect(report.rows_checked).toBe(kept.tree_size);
    });

    it('a changed message: named by its leaf and row id (and the command line tool exits 1)', async () => {
      const all = await rows();
      const row = all[4];
      await tamper([`UPDATE audit_logs SET message = 'Nothing happened here' WHERE id = $1`, [row.id]]);
      try {
        const report = await verify();
        expect(report.problems).toContainEqual({
          tenant_id: victim.tenantId,
          problem: 'leaf_altered',
          leaf_index: 4,
          id: row.id,
        });
        expect(report.problems).toContainEqual(
          expect.objectContaining({
            tenant_id: victim.tenantId,
            problem: 'kept_checkpoint_mismatch',
            leaf_index: 4,
          }),
        );
        const cli = spawnJs('dist/cli.js', ['logs', 'verify', '--checkpoint', keptFile], {
          DATABASE_URL: database.url,
        });
        expect(await cli.exited).toBe(1);
        expect(JSON.parse(cli.stdout()).problems).toContainEqual(
          expect.objectContaining({ problem: 'leaf_altered', leaf_index: 4, id: row.id }),
        );
      } finally {
        await tamper([`UPDATE audit_logs SET message = $2 WHERE id = $1`, [row.id, row.message]]);
      }
      expect((await verify()).problems).toEqual([]);
    });

    it('a deleted row', async () => {
      const [row] = await db.query<Record<string, unknown>[]>(
        `SELECT * FROM audit_logs WHERE tenant_id = $1 ORDER BY written, pos OFFSET 7 LIMIT 1`,
        [victim.tenantId],
      );
      await db.query('DELETE FROM audit_logs WHERE tenant_id = $1 AND id = $2', [victim.tenantId, row.id]);
      try {
        const report = await verify();
        expect(report.problems).toContainEqual({
          tenant_id: victim.tenantId,
          problem: 'leaf_deleted',
          leaf_index: 7,
          id: row.id,
        });
        expect(report.problems).toContainEqual(
          expect.objectContaining({ problem: 'kept_checkpoint_mismatch' }),
        );
      } finally {
        const columns = Object.keys(row);
        await db.query(
          `INSERT INTO audit_logs (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
          Object.values(row),
        );
      }
      expect((await verify()).problems).toEqual([]);
    });

    it('an inserted row', async () => {
      const all = await rows();
      const next = all[9];
      const id = '0a0a0a0a-0000-4000-8000-000000000009';
      await db.query(
        `INSERT INTO audit_logs (id, tenant_id, actor_type, entity_type, operation, message, created_at, written, pos)
         VALUES ($1, $2, 'system', 'token', 'delete', 'Token deleted (token)', now(), $3, $4)`,
        [id, victim.tenantId, next.written, Number(next.pos) - 1],
      );
      try {
        const report = await verify();
        expect(report.problems).toContainEqual({
          tenant_id: victim.tenantId,
          problem: 'leaf_inserted',
          leaf_index: 9,
          id,
        });
        expect(report.problems).toContainEqual(
          expect.objectContaining({ problem: 'kept_checkpoint_mismatch' }),
        );
      } finally {
        await db.query('DELETE FROM audit_logs WHERE id = $1', [id]);
      }
      expect((await verify()).problems).toEqual([]);
    });

    it('a reordered pair', async () => {
      const all = await rows();
      const [a, b] = [all[10], all[11]];
      const swap = (x: StoredRow, y: StoredRow): [string, unknown[]][] => [
        ['UPDATE audit_logs SET pos = -pos WHERE id = $1', [x.id]],
        ['UPDATE audit_logs SET written = $2, pos = $3 WHERE id = $1', [x.id, y.written, y.pos]],
      ];
      await tamper(['UPDATE audit_logs SET pos = -pos WHERE id = $1', [b.id]], ...swap(a, b), [
        'UPDATE audit_logs SET written = $2, pos = $3 WHERE id = $1',
        [b.id, a.written, a.pos],
      ]);
      try {
        const report = await verify();
        expect(report.problems).toContainEqual({
          tenant_id: victim.tenantId,
          problem: 'leaf_reordered',
          leaf_index: 10,
          id: a.id,
        });
        expect(report.problems).toContainEqual(
          expect.objectContaining({ problem: 'kept_checkpoint_mismatch' }),
        );
      } finally {
        await tamper(
          ['UPDATE audit_logs SET pos = -pos WHERE id = $1', [a.id]],
          ['UPDATE audit_logs SET written = $2, pos = $3 WHERE id = $1', [b.id, b.written, b.pos]],
          ['UPDATE audit_logs SET written = $2, pos = $3 WHERE id = $1', [a.id, a.written, a.pos]],
        );
      }
      expect((await verify()).problems).toEqual([]);
    });

    it('a full rewrite, every hash recomputed and the checkpoints removed: only the kept one tells, and it does', async () => {
      const all = await rows();
      const row = all[2];
      await tamper(
        [`UPDATE audit_logs SET message = 'Nothing happened here' WHERE id = $1`, [row.id]],
        ['DELETE FROM audit_checkpoints WHERE tenant_id = $1', [victim.tenantId]],
        ['DELETE FROM audit_tree_tiles WHERE tenant_id = $1', [victim.tenantId]],
        ['DELETE FROM audit_leaves WHERE tenant_id = $1', [victim.tenantId]],
        [
          'UPDATE audit_trees SET size = 0, checkpoint_size = 0, checkpoint_at = NULL WHERE tenant_id = $1',
          [victim.tenantId],
        ],
      );
      // The attacker's tree: rebuilt from the rows as they now are (as the checkpointer would build it).
      const logs = await db.query<(Omit<Log, 'created_at'> & { created_at: Date })[]>(
        `SELECT id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at
           FROM audit_logs WHERE tenant_id = $1 ORDER BY written, pos`,
        [victim.tenantId],
      );
      const { TileSet } = await import('../src/common/audit/tree/tiles');
      const tiles = new TileSet();
      tiles.append(
        0,
        logs.map((l) => independent.logLeafHash({ ...l, created_at: l.created_at.toISOString() })),
      );
      await tamper(
        ...tiles
          .changedTiles()
          .map((tile): [string, unknown[]] => [
            'INSERT INTO audit_tree_tiles (tenant_id, level, idx, hashes) VALUES ($1, $2, $3, $4)',
            [victim.tenantId, tile.level, tile.index, tile.hashes],
          ]),
        ...logs.map((l, i): [string, unknown[]] => [
          'INSERT INTO audit_leaves (tenant_id, row_id, leaf_index) VALUES ($1, $2, $3)',
          [victim.tenantId, l.id, i],
        ]),
        ['UPDATE audit_trees SET size = $2 WHERE tenant_id = $1', [victim.tenantId, logs.length]],
      );
      // Without the kept checkpoint, the database agrees with itself.
      expect((await t.app.get(AuditVerifier).verify({ tenant: victim.tenantId })).problems).toEqual([]);
      const cli = spawnJs('dist/cli.js', ['logs', 'verify', '--checkpoint', keptFile], {
        DATABASE_URL: database.url,
      });
      expect(await cli.exited).toBe(1);
      expect(JSON.parse(cli.stdout()).problems).toEqual([
        expect.objectContaining({
          tenant_id: victim.tenantId,
          problem: 'kept_checkpoint_mismatch',
          tree_size: kept.tree_size,
        }),
      ]);
    });
  });

  describe('retention cannot hide a deletion', () => {
    let forged: TestTenant;
    let first: Checkpoint;
    let kept: Checkpoint;
    const dir = mkdtempSync(join(tmpdir(), 'kept-'));
    const verifyCli = (...args: string[]) =>
      spawnJs('dist/cli.js', ['logs', 'verify', ...args], { DATABASE_URL: database.url });

    beforeAll(async () => {
      forged = await newTenant(t, 'forged');
      first = await checkpoint(forged);
      const key = (
        await newApplication(t, forged.managementKey, { type: 'private', permissions: ['token:create'] })
      ).key;
      await write(2, key);
      await checkpoint(forged);
      await write(2, key);
      kept = await checkpoint(forged);
    });

    it('a checkpoint saved with `jq -r .note > cp.txt` (one extra newline) is accepted; with two, the command says so', async () => {
      const saved = join(dir, 'cp.txt');
      writeFileSync(saved, `${kept.note}\n`);
      const accepted = verifyCli('--checkpoint', saved);
      expect(await accepted.exited).toBe(0);
      expect(JSON.parse(accepted.stdout())).toMatchObject({ problems: [], tenants_checked: 1 });
      const twice = join(dir, 'twice.txt');
      writeFileSync(twice, `${kept.note}\n\n`);
      const refused = verifyCli('--checkpoint', twice);
      expect(await refused.exited).toBe(1);
      expect(JSON.parse(refused.stdout()).problems).toEqual([
        {
          tenant_id: null,
          problem: 'kept_checkpoint_invalid',
          detail:
            'not a signed checkpoint note: it ends with 2 newlines after its last line, where one extra newline is accepted',
        },
      ]);
    });

    it("rows deleted from the start as a superuser, with the tree's record of what retention removed moved: reported, naming the tenant", async () => {
      // The tenant's first checkpoint holds its first 2 rows; the checkpoints after it bound the rest.
      expect(first.tree_size).toBe(2);
      const ids = (
        await db.query<{ id: string }[]>(
          'SELECT id FROM audit_logs WHERE tenant_id = $1 ORDER BY written, pos LIMIT 3',
          [forged.tenantId],
        )
      ).map((r) => r.id);
      await db.transaction(async (m) => {
        await m.query('SET LOCAL session_replication_role = replica');
        await m.query('DELETE FROM audit_logs WHERE tenant_id = $1 AND id = ANY($2::uuid[])', [
          forged.tenantId,
          ids,
        ]);
        await m.query('DELETE FROM audit_leaves WHERE tenant_id = $1 AND row_id = ANY($2::uuid[])', [
          forged.tenantId,
          ids,
        ]);
        await m.query('UPDATE audit_trees SET retained_from = 3 WHERE tenant_id = $1', [forged.tenantId]);
      });
      const early = {
        tenant_id: forged.tenantId,
        problem: 'leaf_deleted_within_retention',
        leaf_index: 2,
        tree_size: 2,
        removed_leaves: { from: 2, to: 3 },
        detail: expect.stringMatching(
          /^the log starts at leaf 3, but the checkpoint of size 2 signed at \S+ shows that leaves 2 to 2 were written after it, less than LOG_RETENTION_DAYS \(365\) ago$/,
        ),
      };
      // Nothing else tells: the kept hashes stand for the rows, and every root and signature holds.
      expect((await t.app.get(AuditVerifier).verify({ tenant: forged.tenantId })).problems).toEqual([early]);
      const saved = join(dir, 'kept.txt');
      writeFileSync(saved, kept.note);
      for (const args of [[], ['--checkpoint', saved]]) {
        const cli = verifyCli(...args);
        expect(await cli.exited).toBe(1);
        expect(JSON.parse(cli.stdout()).problems).toContainEqual(early);
      }
    });
  });

  it('retention deletes the oldest rows; the tree, the checkpoints and the remaining proofs stay valid', async () => {
    const before = await checkpoint(aged);
    await write(3, agedKey);
    const kept = await checkpoint(aged);
    const keptLogs = await allLogs(aged.managementKey);

    const deleted = await t.app.get(RetentionJob).runNow('log-retention');
    expect(deleted).toBeGreaterThanOrEqual(100);
    const remaining = await allLogs(aged.managementKey);
    expect(remaining.length).toBe(9);
    const [tree]: { retained_from: string; size: string }[] = await db.query(
      'SELECT retained_from, size FROM audit_trees WHERE tenant_id = $1',
      [aged.tenantId],
    );
    expect(Number(tree.retained_from)).toBe(kept.tree_size - 9);
    // The checkpoint signed among the deleted rows, 400 days ago, says the leaves after it were written
    // since then: longer ago than LOG_RETENTION_DAYS (365), so their deletion is retention's.
    const signedAt = independent.verifyNote(agedCheckpoint.note, await verifierKey()).time;
    expect(signedAt).toBe(Math.floor(Date.parse(agedCheckpoint.created_at) / 1000));
    expect(Date.now() / 1000 - signedAt).toBeGreaterThan(399 * 86_400);
    expect(agedCheckpoint.tree_size).toBeLessThan(Number(tree.retained_from) - 50);
    const cli = spawnJs('dist/cli.js', ['logs', 'verify', '--tenant', aged.tenantId], {
      DATABASE_URL: database.url,
    });
    expect(await cli.exited).toBe(0);
    expect(JSON.parse(cli.stdout()).problems).toEqual([]);

    for (const log of remaining) await expectProven(log, kept, aged.managementKey);
    const gone = keptLogs.find((log) => !remaining.some((r) => r.id === log.id))!;
    expectProblem(await get(`/logs/${gone.id}/proof`, aged.managementKey), 404);
    const consistency = await get(
      `/logs/consistency?first=${before.tree_size}&second=${kept.tree_size}`,
      aged.managementKey,
    ).expect(200);
    expect(
      independent.verifyConsistency(
        before.tree_size,
        kept.tree_size,
        b64(before.root_hash),
        b64(kept.root_hash),
        consistency.body.consistency_path.map(b64),
      ),
    ).toBe(true);
    expect((await t.app.get(AuditVerifier).verify({ checkpoint: kept.note })).problems).toEqual([]);

    // A row removed outside retention is still reported.
    const victim = remaining[4];
    await db.query('DELETE FROM audit_logs WHERE id = $1', [victim.id]);
    const report = await t.app.get(AuditVerifier).verify({ checkpoint: kept.note });
    expect(report.problems).toContainEqual(
      expect.objectContaining({ problem: 'leaf_deleted', id: victim.id }),
    );
  });
});
