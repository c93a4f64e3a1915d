import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { newApplication, newTenant, startApp, TestApp } from '../support/app';
import { ORCHESTRATION_PERMISSIONS } from '../support/orchestration';
import { freePort, stop } from '../support/processes';
import { waitFor } from '../support/wait';
import { api, Server, startServer } from './support';

interface Create {
  name: string;
  /** The table its resource is written to (locked by the test to hold the write back). */
  table: string;
  path: string;
  body: Record<string, unknown>;
  status: number;
  /** Proxies are made with a management key. */
  management?: boolean;
}

/**
 * Every create that honours `BT-IDEMPOTENCY-KEY` (tokens, buyers, stored cards, flow rules, connections, proxies),
 * with the server killed (SIGKILL) at the point where the answer is written: the test holds the request's
 * idempotency record locked, so the server's write of its answer waits, and kills it there. Before the
 * fix, buyers, stored cards and flow rules had committed by then and recorded their answer in a later
 * statement: a retry with the same key made a second buyer and a second rule. Now the answer is written in
 * the resource's own transaction: the kill leaves either nothing or both, and the retry (on a new server,
 * once the dead one's claim has run out) makes exactly one resource, replayed from then on.
 */
const SERVER_ENV = { JOBS_ENABLED: 'false', BOOTSTRAP: 'false', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' };

describe('creates killed as their answer is recorded, retried with the same key', () => {
  let admin: TestApp;
  let db: Client;
  let server: Server | undefined;

  beforeAll(async () => {
    admin = await startApp({ JOBS_ENABLED: 'false', LOG_LEVEL: 'warn' });
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
  });
  afterAll(async () => {
    if (server) await stop(server.spawned);
    await db.end();
    await admin.close();
  });

  it('one resource per create route, the retry answering it', async () => {
    const tenant = await newTenant(admin, 'idempotent creates');
    const key = (
      await newApplication(admin, tenant.managementKey, {
        type: 'private',
        permissions: [
          ...ORCHESTRATION_PERMISSIONS,
          'orchestration:buyers:create',
          'orchestration:buyers:read',
          'orchestration:buyers:update',
          'orchestration:flows:read',
          'orchestration:flows:update',
        ],
      })
    ).key;
    const proxyManager = (
      await newApplication(admin, tenant.managementKey, { type: 'management', permissions: ['proxy:create'] })
    ).key;
    const as = (path: string, body: object) =>
      request(admin.http).post(path).set('BT-API-KEY', key).send(body).expect(201);
    const buyer = (await as('/orchestration/buyers', { display_name: 'Owner' })).body.id as string;
    const card = (
      await as('/tokenize', {
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 3, expiration_year: 2031, cvc: '123' },
      })
    ).body.id as string;
    const connection = (
      await as('/orchestration/connections', {
        connection_formula_id: 'stripe-card',
        method: 'card',
        display_name: 'Sandbox',
        fields: [{ key: 'secret_key', value: 'sk_test_ok_secret_key' }],
        accepted_countries: ['US'],
        accepted_currencies: ['USD'],
      })
    ).body.id as string;

    const creates: Create[] = [
      {
        name: 'token',
        table: 'tokens',
        path: '/tokens',
        body: { type: 'token', data: 'a secret of its own' },
        status: 201,
      },
      {
        name: 'buyer',
        table: 'buyers',
        path: '/orchestration/buyers',
        body: { display_name: 'Jane' },
        status: 201,
      },
      {
        name: 'stored card',
        table: 'buyer_payment_methods',
        path: `/orchestration/buyers/${buyer}/payment-methods`,
        body: { token: card },
        status: 201,
      },
      {
        name: 'flow rule',
        table: 'flow_rules',
        path: '/orchestration/flows/card-transaction/actions/route-transaction/rules',
        body: {
          description: 'All to the sandbox',
          conditions: [],
          outcome: { type: 'list', result: [connection] },
        },
        status: 201,
      },
      {
        name: 'connection',
        table: 'connections',
        path: '/orchestration/connections',
        body: {
          connection_formula_id: 'stripe-card',
          method: 'card',
          display_name: 'Second',
          fields: [{ key: 'secret_key', value: 'sk_test_ok_secret_key' }],
          accepted_countries: ['US'],
          accepted_currencies: ['USD'],
        },
        status: 201,
      },
      {
        name: 'proxy',
        table: 'proxies',
        path: '/proxies',
        body: { name: 'Echo', destination_url: 'http://127.0.0.1:9/anything' },
        status: 201,
        management: true,
      },
    ];
    const count = async (table: string) =>
      Number(
        (
          await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = $1`, [
            tenant.tenantId,
          ])
        ).rows[0].n,
      );
    const before = Object.fromEntries(
      await Promise.all(creates.map(async (c) => [c.name, await count(c.table)])),
    );
    const keys = Object.fromEntries(creates.map((c) => [c.name, randomUUID()]));
    const send = (base: string, c: Create) =>
      fetch(`${base}${c.path}`, {
        method: 'POST',
        headers: {
          'BT-API-KEY': c.management ? proxyManager : key,
          'BT-IDEMPOTENCY-KEY': keys[c.name],
          'Content-Type': 'application/json',
        },
        body: JSON.stringify(c.body),
      }).then(async (res) => ({
        status: res.status,
        replayed: res.headers.get('bt-idempotency-replayed'),
        text: await res.text(),
      }));

    const port = await freePort();
    server = await startServer(port, process.env.DATABASE_URL!, SERVER_ENV);
    const pid = server.spawned.child.pid;
    /** Backends of the database waiting on a lock: only the server's requests can be. */
    const waiting = async () =>
      Number(
        (
          await db.query<{ n: string }>(
            // Blocked by a lock someone holds now (a backend not yet woken after the tables' lock was
            // released is still shown waiting, but blocked by no one).
            `SELECT count(*) AS n FROM pg_stat_activity
              WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`,
          )
        ).rows[0].n,
      );

    // Each write is held back by a table lock until every request has claimed its key; then the claims are
    // locked, the writes go on, and each request waits where it writes its answer.
    const tables = new Client({
      connectionString: process.env.DATABASE_URL,
      application_name: 'test tables',
    });
    const claims = new Client({
      connectionString: process.env.DATABASE_URL,
      application_name: 'test claims',
    });
    await tables.connect();
    await claims.connect();
    try {
      await tables.query('BEGIN');
      await tables.query(`LOCK TABLE ${creates.map((c) => c.table).join(', ')} IN SHARE MODE`);
      const cut = creates.map((c) =>
        send(server!.base, c).then(
          (res) => `${res.status} ${res.text.slice(0, 300)}`,
          () => 'no answer',
        ),
      );
      await waitFor(
        async () =>
          Number(
            (
              await db.query<{ n: string }>(
                `SELECT count(*) AS n FROM idempotency_records WHERE tenant_id = $1 AND state = 'processing'`,
                [tenant.tenantId],
              )
            ).rows[0].n,
          ) === creates.length,
        { what: 'every request to claim its key' },
      ).catch(async (error: Error) => {
        await tables.query('ROLLBACK');
        const answers = await Promise.all(cut);
        throw new Error(`${error.message}: ${JSON.stringify(answers)}`);
      });
      await claims.query('BEGIN');
      await claims.query(`SELECT 1 FROM idempotency_records WHERE tenant_id = $1 FOR UPDATE`, [
        tenant.tenantId,
      ]);
      await tables.query('COMMIT');
      // Every request of the server waits on a lock (its answer's row, or the tenant's audit chain behind one).
      await waitFor(async () => (await waiting()) >= creates.length, {
        what: 'every request to wait where it records its answer',
      });
      process.kill(pid!, 'SIGKILL');
      await server.spawned.exited;
      // A backend waiting on a lock notices its client is gone only once it gets the lock, and would then
      // run the statement it was sent: ended here, as if the dead process had never sent it.
      await db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`,
      );
      await waitFor(async () => (await waiting()) === 0, { what: 'the dead server’s backends to end' });
      expect(await Promise.all(cut)).toEqual(creates.map(() => 'no answer'));
      const left = await Promise.all(
        creates.map(async (c) => `${c.name} ${(await count(c.table)) - before[c.name]}`),
      );
      process.stdout.write(`idempotent creates: resources committed when killed: ${left.join(', ')}\n`);
    } finally {
      await claims.query('ROLLBACK').catch(() => undefined);
      await tables.query('ROLLBACK').catch(() => undefined);
      await claims.end();
      await tables.end();
    }

    // A new server; the dead one's claims are moved past their timeout (CLAIM_TIMEOUT_MS, 60 s), as time
    // would have it.
    server = await startServer(port, process.env.DATABASE_URL!, SERVER_ENV);
    await db.query(
      `UPDATE idempotency_records SET claimed_until = now() - interval '1 second' WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    const seen: string[] = [];
    for (const c of creates) {
      const retry = await send(server.base, c);
      const replay = await send(server.base, c);
      seen.push(
        `${c.name}: retry ${retry.status}, replay ${replay.status}, ${(await count(c.table)) - before[c.name]} made`,
      );
      expect([c.name, retry.status]).toEqual([c.name, c.status]);
      expect(replay).toEqual({ status: c.status, replayed: 'true', text: retry.text });
      expect([c.name, (await count(c.table)) - before[c.name]]).toEqual([c.name, 1]);
      const id = (JSON.parse(retry.text) as { id: string }).id;
      expect(id).toBeTruthy();
    }
    process.stdout.write(`idempotent creates killed at their answer: ${seen.join('; ')}\n`);
    // The stored card's answer is the card stored for the buyer.
    expect(
      (await api(server.base, key, 'GET', `/orchestration/buyers/${buyer}/payment-methods`)).body,
    ).toHaveLength(1);
  });
});
