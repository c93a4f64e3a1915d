import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/jobs/clock';
import { SettlementService } from '../../src/modules/orchestration/transactions/settlement.service';
import { newApplication, newTenant, startApp, TestApp } from '../support/app';
import { ADYEN_CARDS, FakeAdyen } from '../support/fake-adyen';
import { FakeStripe } from '../support/fake-stripe';
import { ORCHESTRATION_PERMISSIONS } from '../support/orchestration';
import { freePort } from '../support/processes';
import { api, Server, startServer } from './support';

const HMAC_KEY = 'C0FFEE'.repeat(10) + 'C0FFEE00';

/**
 * kill -9 of the server with two routed payments in flight (docs/routing.md): X during its first attempt
 * (Stripe authorized it and never answered), Y during its second (Stripe declined it softly, Adyen
 * authorized it and never answered). After a restart no new attempt is ever started, a client retry with
 * the same BT-IDEMPOTENCY-KEY answers the same transaction, and settlement resolves each in-flight
 * attempt where it was made: X by asking Stripe, Y by Adyen's notification for its attempt 2.
 */
describe('failover across a server crash', () => {
  it('no new attempt after a restart; each in-flight attempt is settled at its own vendor; retries answer the same transactions', async () => {
    const stripe = await new FakeStripe().start();
    const adyen = await new FakeAdyen().start();
    const env = {
      VENDOR_BASE_URLS: `stripe-card=${stripe.baseUrl},adyen-card=${adyen.baseUrl}`,
      PUBLIC_BASE_URL: 'https://vault.example',
    };
    // In this process, on the same database: makes the tenant, reads rows, runs the settlement job.
    const recorder: TestApp = await startApp({ ...env, JOBS_ENABLED: 'false' });
    const databaseUrl = process.env.DATABASE_URL!;
    // The server's jobs run (they verify the connections); its settlement would wait 60 s for these.
    const serverEnv = { ...env, BOOTSTRAP: 'false', LOG_LEVEL: 'error' };
    const port = await freePort();
    let server: Server | undefined;
    try {
      const tenant = await newTenant(recorder);
      const key = (
        await newApplication(recorder, tenant.managementKey, {
          type: 'private',
          permissions: [...ORCHESTRATION_PERMISSIONS, 'orchestration:flows:update'],
        })
      ).key;
      server = await startServer(port, databaseUrl, serverEnv);
      const connect = async (body: Record<string, unknown>) => {
        const created = await api(server!.base, key, 'POST', '/orchestration/connections', {
          method: 'card',
          environment: 'test',
          accepted_countries: ['US'],
          accepted_currencies: ['USD'],
          ...body,
        });
        expect(created.status).toBe(201);
        const id = created.body!.id as string;
        for (let i = 0; i < 100; i++) {
          const got = await api(server!.base, key, 'GET', `/orchestration/connections/${id}`);
          if (got.body!.status === 'available') break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return id;
      };
      const stripeId = await connect({
        connection_formula_id: 'stripe-card',
        display_name: 'Stripe',
        fields: [{ key: 'secret_key', value: 'sk_test_fake' }],
      });
      const adyenId = await connect({
        connection_formula_id: 'adyen-card',
        display_name: 'Adyen',
        fields: [
          { key: 'api_key', value: 'adyen_test_key' },
          { key: 'merchant_account', value: 'TestMerchant' },
          { key: 'hmac_key', value: HMAC_KEY },
        ],
      });
      const rule = await api(
        server.base,
        key,
        'POST',
        '/orchestration/flows/card-transaction/actions/route-transaction/rules',
        {
          description: 'Stripe, then Adyen',
          conditions: [],
          outcome: { type: 'list', result: [stripeId, adyenId] },
        },
      );
      expect(rule.status).toBe(201);
      const tokenOf = async (number: string) =>
        (
          await api(server!.base, key, 'POST', '/tokenize', {
            type: 'card',
            data: { number, expiration_month: 3, expiration_year: 2030, cvc: '737' },
          })
        ).body!.id as string;
      const send = (base: string, idempotencyKey: string, token: string) =>
        fetch(`${base}/orchestration/transactions`, {
          method: 'POST',
          headers: {
            'BT-API-KEY': key,
            'BT-IDEMPOTENCY-KEY': idempotencyKey,
            'Content-Type': 'application/json',
          },
          body: JSON.stringify({ amount: 2500, currency: 'USD', token, intent: 'authorize' }),
        });
      const waitFor = async (done: () => boolean) => {
        for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
        expect(done()).toBe(true);
      };

      // Y: Stripe declines softly, Adyen authorizes and never answers.
      const yKey = randomUUID();
      const yToken = await tokenOf('4000000000000002');
      adyen.hangNext = 1;
      const y = send(server.base, yKey, yToken).catch(() => 'cut off');
      await waitFor(() => adyen.posts(/^\/payments$/).length === 1);
      // X: Stripe authorizes and never answers.
      const xKey = randomUUID();
      const xToken = await tokenOf(ADYEN_CARDS.visa);
      stripe.hangNext = 1;
      const x = send(server.base, xKey, xToken).catch(() => 'cut off');
      await waitFor(() => stripe.posts(/^\/v1\/payment_intents$/).length === 2);
      server.spawned.child.kill('SIGKILL');
      await server.spawned.exited;
      expect(await x).toBe('cut off');
      expect(await y).toBe('cut off');

      const db = recorder.app.get(DataSource);
      const state = () =>
        db.query<
          { id: string; status: string; attempt: number; connection_id: string; attempts: unknown[] }[]
        >(
          `SELECT t.id, t.status, t.attempt, t.connection_id,
                  (SELECT json_agg(json_build_array(a.number, a.connection_id, a.status) ORDER BY a.number)
                     FROM transaction_attempts a WHERE a.tenant_id = t.tenant_id AND a.transaction_id = t.id) AS attempts
             FROM transactions t WHERE t.tenant_id = $1 ORDER BY t.created_at`,
          [tenant.tenantId],
        );
      const [yRow, xRow] = await state();
      expect(yRow).toMatchObject({
        status: 'processing',
        attempt: 2,
        connection_id: adyenId,
        attempts: [
          [1, stripeId, 'declined'],
          [2, adyenId, 'processing'],
        ],
      });
      expect(xRow).toMatchObject({
        status: 'processing',
        attempt: 1,
        attempts: [[1, stripeId, 'processing']],
      });
      const calls = () => stripe.posts(/^\/v1\/payment_intents$/).length + adyen.posts(/^\/payments$/).length;
      const callsAtKill = calls();

      server = await startServer(port, databaseUrl, serverEnv);
      // The dead process's claims still hold (a retry is told to wait, 409): they are moved into the
      // past, as the claim time-out (CLAIM_TIMEOUT_MS, 60 s) would have them, instead of waiting.
      expect((await send(server.base, yKey, yToken)).status).toBe(409);
      await db.query(
        `UPDATE idempotency_records SET claimed_until = now() - interval '1 second' WHERE tenant_id = $1`,
        [tenant.tenantId],
      );
      // The client's retries: the same transactions, as they stand; nothing is sent to a vendor.
      for (const [idempotencyKey, token, row] of [
        [yKey, yToken, yRow],
        [xKey, xToken, xRow],
      ] as const) {
        const retried = await send(server.base, idempotencyKey, token);
        expect(retried.status).toBe(201);
        expect(((await retried.json()) as { id: string }).id).toBe(row.id);
      }
      expect(calls()).toBe(callsAtKill);

      // Y: Adyen's notification names attempt 2; it settles Y there.
      const yReconciliation = (await api(server.base, key, 'GET', `/orchestration/transactions/${yRow.id}`))
        .body!.reconciliation_id as string;
      const yPayment = adyen.payment(`${yReconciliation}.a2`)!;
      expect(yPayment).toBeDefined();
      const delivered = await adyen.sendNotifications(
        `${server.base}/orchestration/vendors/adyen/notifications`,
        HMAC_KEY,
        {
          items: adyen.queued.filter((item) => item.pspReference === yPayment.pspReference),
        },
      );
      expect(delivered).toEqual({ status: 200, body: '[accepted]' });
      // X: the settlement job asks Stripe about attempt 1, which it authorized.
      recorder.app.get(Clock).advance(120_000);
      await recorder.app.get(SettlementService).settle();

      const [ySettled, xSettled] = await state();
      expect(ySettled).toMatchObject({
        status: 'authorization_succeeded',
        connection_id: adyenId,
        attempts: [
          [1, stripeId, 'declined'],
          [2, adyenId, 'succeeded'],
        ],
      });
      expect(xSettled).toMatchObject({
        status: 'authorization_succeeded',
        connection_id: stripeId,
        attempts: [[1, stripeId, 'succeeded']],
      });
      // One authorization each, at one vendor; no call after the crash.
      expect(calls()).toBe(callsAtKill);
      expect(adyen.payments.size).toBe(1);
    } finally {
      if (server) {
        server.spawned.child.kill('SIGKILL');
        await server.spawned.exited;
      }
      await recorder.close();
      await stripe.close();
      await adyen.close();
    }
  }, 240_000);
});
