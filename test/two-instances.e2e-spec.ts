import { randomInt } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AuditCheckpointer } from '../src/common/audit/audit-checkpointer.service';
import { Clock } from '../src/common/jobs/clock';
import { RetentionJob } from '../src/common/jobs/retention.job';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const independent = require('../examples/verify-audit/verify-audit');

import { expectProblem, newApplication, newTenant, startApp, TestApp } from './support/app';
import { newConnection } from './support/orchestration';
import { waitFor } from './support/wait';

/** Two instances of the service on one database. */
describe('two instances on one database', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    [a, b] = await Promise.all([
      startApp({ AUDIT_CHECKPOINT_SECONDS: '1' }),
      startApp({ AUDIT_CHECKPOINT_SECONDS: '1' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  it('runs each scheduled job once per tick across both (job_runs counts them)', async () => {
    // Both clocks move to the same instant years in the past, so that these ticks are this test's alone;
    // in the past, the purges have nothing to delete (other test files share the database).
    const offset = -(3000 + randomInt(1000)) * 86_400_000;
    a.app.get(Clock).advance(offset);
    b.app.get(Clock).advance(offset);
    try {
      const jobs: [string, number, (t: TestApp) => Promise<unknown>][] = [
        ['expired-tokens', 60_000, (t) => t.app.get(RetentionJob).runTick('expired-tokens')],
        ['cvc-retention', 60_000, (t) => t.app.get(RetentionJob).runTick('cvc-retention')],
        ['expired-sessions', 60_000, (t) => t.app.get(RetentionJob).runTick('expired-sessions')],
        ['log-retention', 3_600_000, (t) => t.app.get(RetentionJob).runTick('log-retention')],
        ['idempotency-records', 600_000, (t) => t.app.get(RetentionJob).runTick('idempotency-records')],
        ['rate-limits', 600_000, (t) => t.app.get(RetentionJob).runTick('rate-limits')],
        ['audit-checkpoint', 1_000, (t) => t.app.get(AuditCheckpointer).checkpointTick()],
      ];
      const db = a.app.get(DataSource);
      const summary: Record<string, { runs: number; instances: number }> = {};
      for (const [job, tickMs, fire] of jobs) {
        // Both clocks step to 50 ms past a whole second, read just before this job's ticks fire: a one-second
        // tick then has 950 ms to stay within itself, however long the jobs before it took.
        const step = 1_050 - (a.app.get(Clock).now().getTime() % 1_000);
        a.app.get(Clock).advance(step);
        b.app.get(Clock).advance(step);
        const now = a.app.get(Clock).now().getTime();
        const start = new Date(Math.floor(now / tickMs) * tickMs);
        // Each instance fires the tick three times, all at once, as racing timers would.
        await Promise.all([fire(a), fire(b), fire(a), fire(b), fire(a), fire(b)]);
        const rows: { instance_id: string }[] = await db.query(
          'SELECT instance_id FROM job_runs WHERE job = $1 AND tick_start = $2',
          [job, start],
        );
        summary[job] = { runs: rows.length, instances: new Set(rows.map((r) => r.instance_id)).size };
      }
      process.stdout.write(`job runs per tick with two instances: ${JSON.stringify(summary)}\n`);
      for (const [job, counted] of Object.entries(summary))
        expect({ job, ...counted }).toEqual({ job, runs: 1, instances: 1 });
    } finally {
      a.app.get(Clock).reset();
      b.app.get(Clock).reset();
    }
  });

  it('sessions and keys work on either instance; a revocation on one holds on the other', async () => {
    const tenant = await newTenant(a, 'two instances');
    const pvt = await newApplication(a, tenant.managementKey, {
      type: 'private',
      permissions: ['token:create', 'token:read'],
    });
    const pub = await newApplication(b, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const session = (await request(a.http).post('/sessions').set('BT-API-KEY', pub.key).expect(201)).body;
    await request(b.http)
      .post('/sessions/authorize')
      .set('BT-API-KEY', pvt.key)
      .send({ nonce: session.nonce, permissions: ['token:create'] })
      .expect(204);
    const created = await request(a.http)
      .post('/tokenize')
      .set('BT-API-KEY', session.session_key)
      .send({ type: 'token', data: 'x' })
      .expect(201);
    await request(b.http)
      .post('/tokenize')
      .set('BT-API-KEY', session.session_key)
      .send({ type: 'token', data: 'y' })
      .expect(201);
    await request(b.http).get(`/tokens/${created.body.id}`).set('BT-API-KEY', pvt.key).expect(200);

    const rotated = await request(b.http)
      .post(`/applications/${pvt.id}/keys`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(201);
    await request(a.http).get('/applications/key').set('BT-API-KEY', rotated.body.key).expect(200);
    await request(a.http)
      .delete(`/applications/${pvt.id}/keys/${rotated.body.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(204);
    expectProblem(await request(b.http).get('/applications/key').set('BT-API-KEY', rotated.body.key), 401);
  });

  it('checkpoints each tenant once per period whichever instance signs, every one consistent with the last', async () => {
    const tenant = await newTenant(a, 'checkpoints on two instances');
    const writer = await newApplication(b, tenant.managementKey, {
      type: 'private',
      permissions: ['token:create'],
    });
    const db = a.app.get(DataSource);
    const checkpointsOf = async (): Promise<
      { tree_size: number; created_at: Date; root_hash: Buffer; note: string }[]
    > =>
      db.query(
        'SELECT tree_size::int, created_at, root_hash, note FROM audit_checkpoints WHERE tenant_id = $1 ORDER BY tree_size',
        [tenant.tenantId],
      );
    // Periods pass on the service's clock, not the wall's: each round both instances write while four
    // checkpointers race, then the test waits for that round's checkpoint (the rows committed reach the
    // tree once no older transaction runs) and moves both clocks a period on. However slow the machine,
    // every round has a period of its own.
    const ROUNDS = 3;
    try {
      for (let round = 0; round < ROUNDS; round++) {
        let writing = true;
        const race = async (t: TestApp) => {
          do await t.app.get(AuditCheckpointer).run();
          while (writing);
        };
        const write = async (t: TestApp) => {
          for (let i = 0; i < 5; i++)
            await request(t.http)
              .post('/tokenize')
              .set('BT-API-KEY', writer.key)
              .send(['a', 'b'])
              .expect(201);
        };
        await Promise.all([
          race(a),
          race(b),
          race(a),
          race(b),
          Promise.all([write(a), write(b)]).finally(() => (writing = false)),
        ]);
        await waitFor(
          async () => {
            await Promise.all([a.app.get(AuditCheckpointer).run(), b.app.get(AuditCheckpointer).run()]);
            return (await checkpointsOf()).length > round;
          },
          { what: `a checkpoint in round ${round + 1}` },
        );
        a.app.get(Clock).advance(1_000);
        b.app.get(Clock).advance(1_000);
      }
    } finally {
      a.app.get(Clock).reset();
      b.app.get(Clock).reset();
    }
    const checkpoints = await checkpointsOf();
    process.stdout.write(
      `checkpoints of one tenant on two instances in ${ROUNDS} periods: ${checkpoints.map((c) => c.tree_size).join(', ')}\n`,
    );
    expect(checkpoints.length).toBeGreaterThanOrEqual(ROUNDS);
    const keys = (
      await request(b.http).get('/logs/checkpoint/keys').set('BT-API-KEY', tenant.managementKey).expect(200)
    ).body as { name: string; verifier_key: string }[];
    for (const [i, c] of checkpoints.entries()) {
      // Signed by a listed key, for exactly the stored size and root.
      const signer = / ([^ ]+) [^ ]+\n$/.exec(c.note)![1];
      const opened = independent.verifyNote(
        c.note,
        keys.filter((k) => k.name === signer).at(-1)!.verifier_key,
      );
      expect(opened.treeSize).toBe(c.tree_size);
      expect(Buffer.from(opened.rootHash).equals(c.root_hash)).toBe(true);
      if (i === 0) continue;
      const last = checkpoints[i - 1];
      expect(c.created_at.getTime() - last.created_at.getTime()).toBeGreaterThanOrEqual(1_000);
      const proof = await request(a.http)
        .get(`/logs/consistency?first=${last.tree_size}&second=${c.tree_size}`)
        .set('BT-API-KEY', tenant.managementKey)
        .expect(200);
      expect(
        independent.verifyConsistency(
          last.tree_size,
          c.tree_size,
          last.root_hash,
          c.root_hash,
          proof.body.consistency_path.map((h: string) => Buffer.from(h, 'base64')),
        ),
      ).toBe(true);
    }
  });

  it('routing: payments on one instance never see a half-applied reorder made on the other', async () => {
    const tenant = await newTenant(a, 'two-instances-routing');
    const key = (
      await newApplication(a, tenant.managementKey, {
        type: 'private',
        permissions: [
          'token:create',
          'token:use',
          'orchestration:connections:create',
          'orchestration:connections:update',
          'orchestration:connection_formulas',
          'orchestration:flows:read',
          'orchestration:flows:update',
        ],
      })
    ).key;
    const connections = await Promise.all(
      ['stripe-card', 'braintree-card', 'nmi-card'].map((formula) =>
        newConnection(a, key, { formulaId: formula, currencies: ['USD'], countries: ['US'] }),
      ),
    );
    const rules: { id: string; connection: string }[] = [];
    for (const connection of connections) {
      const rule = await request(a.http)
        .post('/orchestration/flows/card-transaction/actions/route-transaction/rules')
        .set('BT-API-KEY', key)
        .send({ description: 'all', conditions: [], outcome: { type: 'list', result: [connection.id] } })
        .expect(201);
      rules.push({ id: rule.body.id as string, connection: connection.id });
    }
    const token = (
      await request(b.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({
          type: 'card',
          data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
        })
        .expect(201)
    ).body.id as string;
    // On a: the rules rotate, each move renumbering the others. On b: dry runs and lists meanwhile.
    let moving = true;
    const mover = (async () => {
      for (let i = 0; moving && i < 60; i++) {
        const rule = rules[i % rules.length];
        await request(a.http)
          .put(`/orchestration/flows/card-transaction/actions/route-transaction/rules/${rule.id}`)
          .set('BT-API-KEY', key)
          .send({
            description: 'all',
            conditions: [],
            outcome: { type: 'list', result: [rule.connection] },
            position: 3 - (i % 3),
          })
          .expect(200);
      }
    })();
    const seen: { rule: string; connections: string[] }[] = [];
    const orders: number[][] = [];
    for (let i = 0; i < 40; i++) {
      const [evaluated, listed] = await Promise.all([
        request(b.http)
          .post('/orchestration/flows/card-transaction/evaluate')
          .set('BT-API-KEY', key)
          .send({ amount: 100, currency: 'USD', token })
          .expect(200),
        request(b.http)
          .get('/orchestration/flows/card-transaction/actions/route-transaction/rules')
          .set('BT-API-KEY', key)
          .expect(200),
      ]);
      seen.push({
        rule: evaluated.body.rule_id,
        connections: (evaluated.body.connections as { id: string }[]).map((c) => c.id),
      });
      orders.push((listed.body as { position: number }[]).map((r) => r.position));
    }
    moving = false;
    await mover;
    // Every answer is one rule's whole decision, and every list a whole order 1..3.
    for (const answer of seen) {
      const rule = rules.find((r) => r.id === answer.rule);
      expect(rule).toBeDefined();
      expect(answer.connections).toEqual([rule!.connection]);
    }
    for (const order of orders) expect(order).toEqual([1, 2, 3]);
  });
});
