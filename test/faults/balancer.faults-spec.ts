import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { startCluster, type Cluster } from '../../bin/cluster';
import { FakeStripe } from '../support/fake-stripe';
import { ORCHESTRATION_PERMISSIONS } from '../support/orchestration';
import { waitFor } from '../support/wait';

type Operation = 'payment' | 'capture' | 'void' | 'refund';
const OPERATIONS: Operation[] = ['payment', 'capture', 'void', 'refund'];

/** The Stripe call each operation makes: one POST per client request, whatever dies under it. */
const VENDOR_CALL: Record<Operation, RegExp> = {
  payment: /^\/v1\/payment_intents$/,
  capture: /^\/v1\/payment_intents\/[^/]+\/capture$/,
  void: /^\/v1\/payment_intents\/[^/]+\/cancel$/,
  refund: /^\/v1\/refunds$/,
};

/**
 * The shipped balancer (`npm run cluster`'s own HAProxy configuration) with an instance killed (SIGKILL)
 * while its Stripe calls are in flight: Stripe performed each and never answered. HAProxy must not send
 * those requests to the other instance (it retries only a connection that failed before the request
 * reached an instance), so each client request moves money at the vendor once: a payment, a capture, a
 * void and a partial refund, sent without `BT-IDEMPOTENCY-KEY` and then with it. With the key, the
 * client's own retry (once the dead instance's claim has timed out) answers the same transaction or
 * refund and calls Stripe no more.
 */
describe('the shipped balancer when an instance dies mid-vendor-call', () => {
  let cluster: Cluster | undefined;
  let stripe: FakeStripe | undefined;
  let db: Client | undefined;

  afterAll(async () => {
    await db?.end();
    await cluster?.stop();
    await stripe?.close();
  });

  it('moves money once per client request, with and without BT-IDEMPOTENCY-KEY', async () => {
    stripe = await new FakeStripe().start();
    cluster = await startCluster({
      databasePrefix: 'vault_test_cluster',
      logLevel: 'warn',
      env: { VENDOR_BASE_URLS: `stripe-card=${stripe.baseUrl}`, RATE_LIMIT_PER_MINUTE: '100000000' },
    });
    const base = cluster.url;
    db = new Client({ connectionString: cluster.directUrl });
    await db.connect();
    const call = async (key: string, method: string, path: string, body?: unknown, extra = {}) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { 'BT-API-KEY': key, 'Content-Type': 'application/json', ...extra },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
    };

    const app = await call(cluster.managementKey!, 'POST', '/applications', {
      name: 'balancer',
      type: 'private',
      permissions: ORCHESTRATION_PERMISSIONS,
    });
    expect(app.status).toBe(201);
    const key = app.body.key as string;
    const connection = await call(key, 'POST', '/orchestration/connections', {
      connection_formula_id: 'stripe-card',
      method: 'card',
      display_name: 'Stripe',
      fields: [{ key: 'secret_key', value: 'sk_test_fake' }],
      environment: 'test',
      accepted_countries: ['US'],
      accepted_currencies: ['USD'],
    });
    expect(connection.status).toBe(201);
    const connectionId = connection.body.id as string;
    await waitFor(
      async () =>
        (await call(key, 'GET', `/orchestration/connections/${connectionId}`)).body.status === 'available',
      { what: 'the connection to be verified' },
    );
    const card = await call(key, 'POST', '/tokenize', {
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 3, expiration_year: 2030, cvc: '123' },
    });
    const pay = (intent: 'authorize' | 'capture', headers = {}) =>
      call(
        key,
        'POST',
        '/orchestration/transactions',
        { amount: 1000, currency: 'USD', token: card.body.id, connection_id: connectionId, intent },
        headers,
      );

    /** Everything the four operations need, made beforehand on a healthy cluster. */
    const prepare = async () => {
      const toCapture = await pay('authorize');
      const toVoid = await pay('authorize');
      const toRefund = await pay('capture');
      for (const t of [toCapture, toVoid, toRefund]) expect(t.status).toBe(201);
      expect(toRefund.body.status).toBe('capture_succeeded');
      return {
        payment: () => ['/orchestration/transactions', undefined] as const,
        capture: () => [`/orchestration/transactions/${String(toCapture.body.id)}/capture`, {}] as const,
        void: () => [`/orchestration/transactions/${String(toVoid.body.id)}/void`, undefined] as const,
        refund: () =>
          [`/orchestration/transactions/${String(toRefund.body.id)}/refunds`, { amount: 300 }] as const,
      };
    };
    const bodyOf = (operation: Operation, given: unknown) =>
      operation === 'payment'
        ? {
            amount: 1000,
            currency: 'USD',
            token: card.body.id,
            connection_id: connectionId,
            intent: 'authorize',
          }
        : given;

    /**
     * The four requests sent at once through the balancer to one instance (the other disabled in HAProxy),
     * each hanging at Stripe; that instance is killed once Stripe has performed all four.
     */
    const killMidVendorCall = async (headers: (operation: Operation) => Record<string, string>) => {
      const paths = await prepare();
      const [victim, survivor] = cluster!.instances;
      await cluster!.haproxy.command(`disable server instances/${survivor.name}`);
      const before = Object.fromEntries(OPERATIONS.map((o) => [o, stripe!.posts(VENDOR_CALL[o]).length]));
      stripe!.hangNext = OPERATIONS.length;
      const answers = OPERATIONS.map((operation) => {
        const [path, body] = paths[operation]();
        return call(key, 'POST', path, bodyOf(operation, body), headers(operation)).catch(
          (error: { cause?: { code?: string } }) => ({ status: error.cause?.code ?? 'error', body: {} }),
        );
      });
      const settled: unknown[] = [];
      answers.forEach((a, i) => void a.then((answer) => settled.push([OPERATIONS[i], answer])));
      await waitFor(() => stripe!.hangNext === 0, { what: 'Stripe to perform the four calls' }).catch(
        (error: Error) => {
          const paths = stripe!.requests.slice(-6).map((r) => `${r.method} ${r.path}`);
          throw new Error(
            `${error.message}; answered ${JSON.stringify(settled)}; Stripe saw ${paths.join(', ')}`,
          );
        },
      );
      // The survivor back in rotation before the kill: a balancer that re-sends has somewhere to send to.
      await cluster!.haproxy.command(`enable server instances/${survivor.name}`);
      await victim.kill();
      const seen = await Promise.all(answers);
      // Time for a re-sent request to reach Stripe, were the balancer to send one.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const vendorCalls = Object.fromEntries(
        OPERATIONS.map((o) => [o, stripe!.posts(VENDOR_CALL[o]).length - before[o]]),
      );
      return { paths, seen, vendorCalls, victim, before };
    };

    // Without the key: the client learns nothing (the balancer answers 502), and money moved once.
    const payments = async () =>
      Number((await db!.query<{ n: string }>('SELECT count(*) AS n FROM transactions')).rows[0].n);
    const paymentsBefore = await payments();
    const first = await killMidVendorCall(() => ({}));
    expect(first.vendorCalls).toEqual({ payment: 1, capture: 1, void: 1, refund: 1 });
    // The client learns nothing: the balancer answers 502 or closes the connection, and sends nothing on.
    expect(first.seen.filter((s) => typeof s.status === 'number' && s.status < 500)).toEqual([]);
    // The three prepared payments and the one sent: none made twice.
    expect((await payments()) - paymentsBefore).toBe(4);
    const retries = (await cluster.stats()).reduce((sum, s) => sum + s.retries + s.redispatches, 0);
    expect(retries).toBe(0);
    await first.victim.start();

    // With the key: the same, and the client's retry answers what the first request did.
    const keys = Object.fromEntries(OPERATIONS.map((o) => [o, randomUUID()])) as Record<Operation, string>;
    const withKey = (operation: Operation) => ({ 'BT-IDEMPOTENCY-KEY': keys[operation] });
    const second = await killMidVendorCall(withKey);
    const retryOf = (operation: Operation) => {
      const [path, body] = second.paths[operation]();
      return [path, bodyOf(operation, body), withKey(operation)] as const;
    };
    expect(second.vendorCalls).toEqual({ payment: 1, capture: 1, void: 1, refund: 1 });
    // The client learns nothing: the balancer answers 502 or closes the connection, and sends nothing on.
    expect(second.seen.filter((s) => typeof s.status === 'number' && s.status < 500)).toEqual([]);
    // 409 while the dead instance's claims hold (CLAIM_TIMEOUT_MS, 60 s, a constant): rather than wait a
    // minute, the claims are moved into the past, as time would have it.
    const early = await call(key, 'POST', ...retryOf('payment'));
    expect(early.status).toBe(409);
    await db.query(
      `UPDATE idempotency_records SET claimed_until = now() - interval '1 second' WHERE state = 'processing'`,
    );
    const answered = await Promise.all(
      OPERATIONS.map(async (operation) => {
        const [path, body] = second.paths[operation]();
        const answer = await call(key, 'POST', path, bodyOf(operation, body), withKey(operation));
        return [operation, answer] as const;
      }),
    );
    const vendorCalls = Object.fromEntries(
      OPERATIONS.map((o) => [o, stripe!.posts(VENDOR_CALL[o]).length - second.before[o]]),
    );
    process.stdout.write(
      `balancer kill: without the key ${JSON.stringify(first.vendorCalls)} vendor calls, answers ` +
        `${first.seen.map((s) => s.status).join(', ')}; with it ${JSON.stringify(vendorCalls)}, retries answered ` +
        `${answered.map(([o, a]) => `${o} ${a.status} ${String(a.body.status)}`).join(', ')}\n`,
    );
    for (const [operation, answer] of answered) {
      expect([operation, answer.status]).toEqual([
        operation,
        operation === 'payment' || operation === 'refund' ? 201 : 200,
      ]);
    }
    expect(vendorCalls).toEqual({ payment: 1, capture: 1, void: 1, refund: 1 });
    // One transaction for the payment request and its retry, one refund of 300 for the refund's.
    expect((await payments()) - paymentsBefore).toBe(8);
    const refund = answered.find(([o]) => o === 'refund')![1];
    const refunds = await call(key, 'GET', `${second.paths.refund()[0]}`);
    const listed = (refunds.body.items ?? refunds.body.data) as { id: string; amount: number }[];
    expect(listed.map((r) => [r.id, r.amount])).toEqual([[refund.body.id, 300]]);
  });
});
