import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/jobs/clock';
import { BraintreeProcessor } from '../../src/modules/orchestration/processors/braintree/braintree.processor';
import { ProcessorRegistry } from '../../src/modules/orchestration/processors/processor.registry';
import { SettlementService } from '../../src/modules/orchestration/transactions/settlement.service';
import { newApplication, newTenant, startApp, TestApp } from '../support/app';
import { BRAINTREE_CARDS, FakeBraintree } from '../support/fake-braintree';
import { ORCHESTRATION_PERMISSIONS, waitForConnection } from '../support/orchestration';
import { freePort } from '../support/processes';
import { api, Server, startServer } from './support';

type Tx = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const FIELDS = [
  { key: 'merchant_id', value: 'fake_merchant' },
  { key: 'public_key', value: 'bt_public_test' },
  { key: 'private_key', value: 'bt_private_test' },
];
const CONNECTION = {
  connection_formula_id: 'braintree-card',
  method: 'card',
  display_name: 'Braintree test',
  environment: 'test',
  fields: FIELDS,
  accepted_countries: ['US'],
  accepted_currencies: ['USD'],
};

/** The settlement job of `t`, `seconds` from now. */
async function settleAfter(t: TestApp, seconds: number): Promise<void> {
  const clock = t.app.get(Clock);
  clock.advance(seconds * 1000);
  try {
    await t.app.get(SettlementService).settle();
  } finally {
    clock.advance(-seconds * 1000);
  }
}

/**
 * braintree-card's faults: nothing listening, a 429, a 5xx after Braintree received the payment, a
 * time-out, and kill -9 of the server between Braintree's answer and the commit. Braintree takes no
 * idempotency key: whatever happens, the attempt's orderId finds what Braintree did, and nothing is
 * charged twice.
 */
describe('braintree-card faults', () => {
  let fake: FakeBraintree;
  let t: TestApp;
  let key: string;
  let connection: string;
  let tenantId: string;

  const pay = async (extra: Record<string, unknown> = {}): Promise<Tx> => {
    const token = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .send({
        type: 'card',
        data: { number: BRAINTREE_CARDS.visa, expiration_month: 3, expiration_year: 2030 },
      })
      .expect(201);
    return (
      await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({ amount: 2500, currency: 'USD', connection_id: connection, token: token.body.id, ...extra })
        .expect(201)
    ).body as Tx;
  };
  const get = async (id: string): Promise<Tx> =>
    (await request(t.http).get(`/orchestration/transactions/${id}`).set('BT-API-KEY', key).expect(200)).body;

  beforeAll(async () => {
    fake = await new FakeBraintree().start();
    t = await startApp({ VENDOR_BASE_URLS: `braintree-card=${fake.baseUrl}`, JOBS_ENABLED: 'false' });
    const tenant = await newTenant(t, 'braintree faults');
    tenantId = tenant.tenantId;
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    const res = await request(t.http)
      .post('/orchestration/connections')
      .set('BT-API-KEY', key)
      .send(CONNECTION);
    connection = res.body.id;
    expect(await waitForConnection(t, key, connection)).toBe('available');
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  afterEach(() => {
    fake.faultOn = /./;
    expect(fake.invalid).toEqual([]);
  });

  it('a 429 on the authorizing call: failed processor_unavailable, nothing made at Braintree', async () => {
    fake.faultOn = /^AuthorizePaymentMethod$/;
    fake.rateLimitNext = 1;
    const tx = await pay();
    expect(tx).toMatchObject({ status: 'authorization_failed', error_code: 'processor_unavailable' });
    expect(fake.ledger.byOrderId(tx.reconciliation_id)).toHaveLength(0);
  });

  it('a 5xx after Braintree charged: the search by orderId finds the charge; one transaction', async () => {
    fake.faultOn = /^ChargePaymentMethod$/;
    fake.failAfterNext = 1;
    const tx = await pay({ intent: 'capture' });
    expect(tx).toMatchObject({ status: 'capture_succeeded', captured_amount: 2500 });
    expect(fake.ledger.byOrderId(tx.reconciliation_id)).toHaveLength(1);
    expect(
      fake
        .calls('ChargePaymentMethod')
        .filter((r) => r.variables.input.transaction.orderId === tx.reconciliation_id),
    ).toHaveLength(1);
  });

  it('a time-out with the search failing too: processing, then settled from the search within 120 s', async () => {
    const processor = t.app
      .get(ProcessorRegistry)
      .for({ formulaId: 'braintree-card', environment: 'test' }) as BraintreeProcessor;
    processor.timeoutMs = 400;
    fake.faultOn = /^(AuthorizePaymentMethod|TransactionsByOrderId)$/;
    fake.hangNext = 2;
    try {
      const tx = await pay();
      expect(tx.status).toBe('processing');
      processor.timeoutMs = 12_000;
      fake.faultOn = /./;
      await settleAfter(t, 61);
      const [made] = fake.ledger.byOrderId(tx.reconciliation_id);
      expect(await get(tx.id)).toMatchObject({
        status: 'authorization_succeeded',
        connection_transaction_id: made.id,
      });
      expect(fake.ledger.byOrderId(tx.reconciliation_id)).toHaveLength(1);
    } finally {
      processor.timeoutMs = 12_000;
    }
  });

  it('nothing listening: failed processor_unavailable at once, nothing charged; back once Braintree is', async () => {
    const port = Number(new URL(fake.baseUrl).port);
    await fake.close();
    try {
      const tx = await pay();
      expect(tx).toMatchObject({ status: 'authorization_failed', error_code: 'processor_unavailable' });
      expect(fake.ledger.byOrderId(tx.reconciliation_id)).toHaveLength(0);
    } finally {
      await fake.start(port);
    }
    expect((await pay()).status).toBe('authorization_succeeded');
  });

  it('kill -9 between Braintree’s answer and the commit: after a restart, settled once from the search', async () => {
    const databaseUrl = process.env.DATABASE_URL!;
    const env = {
      VENDOR_BASE_URLS: `braintree-card=${fake.baseUrl}`,
      BOOTSTRAP: 'false',
      LOG_LEVEL: 'error',
    };
    const port = await freePort();
    let server: Server | undefined = await startServer(port, databaseUrl, env);
    try {
      const made = await api(server.base, key, 'POST', '/orchestration/connections', CONNECTION);
      const id = made.body!.id as string;
      for (let i = 0; i < 100; i++) {
        if (
          (await api(server.base, key, 'GET', `/orchestration/connections/${id}`)).body!.status ===
          'available'
        )
          break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const token = await api(server.base, key, 'POST', '/tokenize', {
        type: 'card',
        data: { number: BRAINTREE_CARDS.visa, expiration_month: 3, expiration_year: 2030, cvc: '123' },
      });
      const idempotencyKey = randomUUID();
      const body = {
        amount: 4200,
        currency: 'USD',
        connection_id: id,
        token: token.body!.id,
        intent: 'capture',
      };
      const send = (base: string) =>
        fetch(`${base}/orchestration/transactions`, {
          method: 'POST',
          headers: {
            'BT-API-KEY': key,
            'BT-IDEMPOTENCY-KEY': idempotencyKey,
            'Content-Type': 'application/json',
          },
          body: JSON.stringify(body),
        });
      const dying = server;
      fake.beforeAnswer = async (operation) => {
        if (operation !== 'ChargePaymentMethod') return;
        fake.beforeAnswer = undefined;
        dying.spawned.child.kill('SIGKILL');
        await dying.spawned.exited;
      };
      expect(
        await send(server.base).then(
          () => 'answered',
          () => 'cut off',
        ),
      ).toBe('cut off');
      const db = t.app.get(DataSource);
      const [row] = await db.query<
        { id: string; status: string; connection_transaction_id: string | null }[]
      >('SELECT id, status, connection_transaction_id FROM transactions WHERE connection_id = $1', [id]);
      expect(row).toMatchObject({ status: 'processing', connection_transaction_id: null });
      const reconciliation = fake.calls('ChargePaymentMethod').at(-1)!.variables.input.transaction
        .orderId as string;
      const charged = fake.ledger.byOrderId(reconciliation);
      expect(charged.map((tx) => tx.status)).toEqual(['SUBMITTED_FOR_SETTLEMENT']);

      server = await startServer(port, databaseUrl, env);
      await db.query(
        `UPDATE idempotency_records SET claimed_until = now() - interval '1 second' WHERE tenant_id = $1`,
        [tenantId],
      );
      const retried = await send(server.base);
      expect(retried.status).toBe(201);
      expect(((await retried.json()) as Tx).id).toBe(row.id);
      await settleAfter(t, 61);
      const after = await api(server.base, key, 'GET', `/orchestration/transactions/${row.id}`);
      expect(after.body).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: 4200,
        connection_transaction_id: charged[0].id,
      });
      expect(fake.ledger.byOrderId(reconciliation)).toHaveLength(1);
      expect(
        fake
          .calls('ChargePaymentMethod')
          .filter((r) => r.variables.input.transaction.orderId === reconciliation),
      ).toHaveLength(1);
    } finally {
      fake.beforeAnswer = undefined;
      if (server) {
        server.spawned.child.kill('SIGKILL');
        await server.spawned.exited;
      }
    }
  }, 180_000);
});
