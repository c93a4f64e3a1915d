import { Client } from 'pg';
import { startCluster, type Cluster } from '../../bin/cluster';
import { Destination } from '../support/destination';
import { waitFor } from '../support/wait';

/** What a client saw of one kind of request. */
interface Tally {
  sent: number;
  ok: number;
  /** `status` or the connection error's code, with the count of each. */
  failures: Map<string, number>;
}

type Kind = 'tokenize' | 'read' | 'transaction' | 'proxy' | 'slow proxy' | 'slow direct';

const json = (key: string, extra: Record<string, string> = {}) => ({
  'BT-API-KEY': key,
  'Content-Type': 'application/json',
  ...extra,
});

/**
 * A rolling restart behind HAProxy (`npm run cluster`: PgBouncer in transaction mode, two instances, HAProxy
 * retrying only a connection that never reached an instance): while clients send a steady mix of tokenizes, token reads, sandbox
 * payments and proxy requests (four clients keep proxy requests answered after 5 s in flight) through the
 * balancer, instance 1 is stopped (SIGTERM) and started again, then instance 2; each is stopped while a
 * slow proxy request sent straight to it is in flight. The clients see no failed request: not one non-2xx
 * answer, not one connection error; each instance exits 0 (drained within its grace). Nothing is sent
 * twice: each stopping instance serves, not ready, for its drain delay (SHUTDOWN_DRAIN_DELAY_MS, 3 s)
 * until HAProxy has taken it out, so the balancer never retries, and the tokens written are exactly the
 * tokenizes answered.
 */
describe('rolling restart of the cluster under load', () => {
  let cluster: Cluster | undefined;
  let destination: Destination | undefined;

  afterAll(async () => {
    await cluster?.stop();
    await destination?.stop();
  });

  it('answers every request 2xx while each instance is restarted in turn', async () => {
    destination = await new Destination().start();
    cluster = await startCluster({
      databasePrefix: 'vault_test_cluster',
      logLevel: 'warn',
      env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '100000000' },
    });
    const base = cluster.url;
    const app = await fetch(`${base}/applications`, {
      method: 'POST',
      headers: json(cluster.managementKey!),
      body: JSON.stringify({
        name: 'rolling restart',
        type: 'private',
        permissions: [
          'token:create',
          'token:read',
          'token:use',
          'orchestration:connection_formulas',
          'orchestration:connections:create',
          'orchestration:connections:update',
          'orchestration:transactions:read',
        ],
      }),
    });
    expect(app.status).toBe(201);
    const { key } = (await app.json()) as { key: string };
    const connection = (await (
      await fetch(`${base}/orchestration/connections`, {
        method: 'POST',
        headers: json(key),
        body: JSON.stringify({
          connection_formula_id: 'stripe-card',
          method: 'card',
          display_name: 'Sandbox',
          fields: [{ key: 'secret_key', value: 'sk_test_ok_secret_key' }],
          accepted_countries: ['US'],
          accepted_currencies: ['USD'],
        }),
      })
    ).json()) as { id: string };
    for (let i = 0; i < 100; i++) {
      const got = (await (
        await fetch(`${base}/orchestration/connections/${connection.id}`, { headers: json(key) })
      ).json()) as { status: string };
      if (got.status === 'available') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const card = (await (
      await fetch(`${base}/tokenize`, {
        method: 'POST',
        headers: json(key),
        body: JSON.stringify({
          type: 'card',
          data: { number: '4242424242424242', expiration_month: 3, expiration_year: 2030, cvc: '123' },
        }),
      })
    ).json()) as { id: string };

    const tallies = new Map<Kind, Tally>();
    const tally = (kind: Kind) => {
      let t = tallies.get(kind);
      if (!t) tallies.set(kind, (t = { sent: 0, ok: 0, failures: new Map() }));
      return t;
    };
    const requests: Record<Kind, (n: number) => Promise<Response>> = {
      tokenize: (n) =>
        fetch(`${base}/tokenize`, {
          method: 'POST',
          headers: json(key),
          body: JSON.stringify({ type: 'token', data: `rolling-${n}` }),
        }),
      read: () => fetch(`${base}/tokens/${card.id}`, { headers: json(key) }),
      transaction: () =>
        fetch(`${base}/orchestration/transactions`, {
          method: 'POST',
          headers: json(key),
          body: JSON.stringify({
            amount: 1000,
            currency: 'USD',
            token: card.id,
            connection_id: connection.id,
            intent: 'authorize',
          }),
        }),
      proxy: (n) =>
        fetch(`${base}/proxy`, {
          method: 'POST',
          headers: json(key, { 'BT-PROXY-URL': destination!.url('/echo') }),
          body: JSON.stringify({ n, card: `{{ ${card.id} | json: '$.expiration_year' }}` }),
        }),
      // Answered after 5 s: an instance that stops has some in flight, which it lets finish.
      'slow proxy': () => slow(base),
      // The same sent to the instance about to stop, straight: its drain has one for certain.
      'slow direct': () => {
        throw new Error('sent by the restarts');
      },
    };
    function slow(to: string) {
      return fetch(`${to}/proxy`, {
        method: 'POST',
        headers: json(key, { 'BT-PROXY-URL': destination!.url('/slow') }),
        body: '{}',
      });
    }
    // The mix; the slow proxy requests have clients of their own.
    const kinds: Kind[] = ['tokenize', 'read', 'transaction', 'proxy'];
    let running = true;
    let n = 0;
    /** Sends one request and counts its outcome. */
    const send = async (kind: Kind, request: () => Promise<Response>) => {
      const t = tally(kind);
      t.sent++;
      try {
        const res = await request();
        await res.arrayBuffer();
        if (res.status >= 200 && res.status < 300) t.ok++;
        else t.failures.set(String(res.status), (t.failures.get(String(res.status)) ?? 0) + 1);
      } catch (error) {
        const cause = (error as { cause?: { code?: string } }).cause?.code ?? String(error);
        t.failures.set(cause, (t.failures.get(cause) ?? 0) + 1);
      }
    };
    const client = async (only?: Kind, delayMs = 0) => {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      while (running) {
        const i = n++;
        const kind = only ?? kinds[i % kinds.length];
        await send(kind, () => requests[kind](i));
      }
    };
    const clients = [
      ...Array.from({ length: 6 }, () => client()),
      // Staggered, so that one is always a few seconds from its answer.
      ...Array.from({ length: 4 }, (_, i) => client('slow proxy', i * 1_250)),
    ];
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    const started = Date.now();
    await pause(3_000);
    const restarts = [];
    const direct: Promise<void>[] = [];
    for (const instance of cluster.instances) {
      const arrived = destination.received.length;
      direct.push(send('slow direct', () => slow(instance.url)));
      await waitFor(() => destination!.received.length > arrived, { what: 'the slow request to arrive' });
      restarts.push({ name: instance.name, ...(await instance.restart()) });
      await pause(2_000);
    }
    await Promise.all(direct);
    running = false;
    await Promise.all(clients);
    const elapsed = Date.now() - started;
    const stats = await cluster.stats();

    const sent = [...tallies.values()].reduce((sum, t) => sum + t.sent, 0);
    const failed = [...tallies.values()].reduce((sum, t) => sum + (t.sent - t.ok), 0);
    const lines = [
      `rolling restart: ${sent} requests in ${elapsed} ms, ${failed} failed (non-2xx or connection errors)`,
      ...[...tallies].map(
        ([kind, t]) =>
          `  ${kind.padEnd(11)} ${t.sent} sent, ${t.ok} 2xx` +
          (t.failures.size ? `, failed: ${JSON.stringify(Object.fromEntries(t.failures))}` : ''),
      ),
      ...restarts.map(
        (r) =>
          `  restart ${r.name}: exit ${String(r.code)}, stopped in ${r.stopMs} ms ` +
          `(${r.shutdown.find((line) => line.includes('draining'))?.replace(/^shutdown: /, '') ?? '?'}), ` +
          `ready ${r.readyMs} ms after its start, back in HAProxy after ${r.balancedMs} ms`,
      ),
      ...stats.map(
        (s) =>
          `  haproxy ${s.name}: ${s.requests} requests, ${s.retries} retries, ${s.redispatches} redispatched, ` +
          `${s.connectionErrors} connection errors, ${s.responseErrors} response errors, ${s.http5xx} 5xx`,
      ),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);

    const db = new Client({ connectionString: cluster.directUrl });
    await db.connect();
    const tokens = Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM tokens')).rows[0].n);
    await db.end();
    process.stdout.write(`  tokens written: ${tokens} (the card and ${tokens - 1} tokenizes)\n`);
    expect(tokens).toBe(1 + tally('tokenize').ok);
    expect(stats.reduce((sum, s) => sum + s.retries + s.redispatches, 0)).toBe(0);
    expect(sent).toBeGreaterThan(500);
    for (const kind of kinds) expect(tally(kind).ok).toBeGreaterThan(50);
    expect(tally('slow proxy').ok).toBeGreaterThanOrEqual(16);
    expect(tally('slow direct').ok).toBe(2);
    // Each instance had the slow request sent to it in flight when it was told to stop.
    for (const r of restarts) expect(r.stopMs).toBeGreaterThan(1_000);
    expect(failed).toBe(0);
    expect(restarts.map((r) => r.code)).toEqual([0, 0]);
  });
});
