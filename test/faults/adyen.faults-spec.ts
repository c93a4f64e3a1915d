import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { newApplication, newTenant, startApp, TestApp } from '../support/app';
import { ADYEN_CARDS, FakeAdyen } from '../support/fake-adyen';
import { ORCHESTRATION_PERMISSIONS } from '../support/orchestration';
import { freePort } from '../support/processes';
import { api, Server, startServer } from './support';

const HMAC_KEY = 'C0FFEE'.repeat(10) + 'C0FFEE00';

/**
 * kill -9 of the server while Adyen performs a payment (the fake Adyen authorizes it and never
 * answers): the transaction is committed `processing` without Adyen's reference. After a restart,
 * Adyen's AUTHORISATION notification (Adyen retries until a server accepts it) settles it with the
 * payment Adyen made; nothing calls Adyen's /payments again, so the card is charged once.
 */
describe('adyen-card across a server crash', () => {
  it('a payment Adyen made while the server died is settled by its notification after a restart, once', async () => {
    const fake = await new FakeAdyen().start();
    const recorder: TestApp = await startApp({ JOBS_ENABLED: 'false' });
    const databaseUrl = process.env.DATABASE_URL!;
    const env = {
      VENDOR_BASE_URLS: `adyen-card=${fake.baseUrl}`,
      PUBLIC_BASE_URL: 'https://vault.example',
      BOOTSTRAP: 'false',
      LOG_LEVEL: 'error',
    };
    const port = await freePort();
    let server: Server | undefined;
    try {
      const tenant = await newTenant(recorder);
      const key = (
        await newApplication(recorder, tenant.managementKey, {
          type: 'private',
          permissions: ORCHESTRATION_PERMISSIONS,
        })
      ).key;
      server = await startServer(port, databaseUrl, env);
      const base = server.base;
      const connection = await api(base, key, 'POST', '/orchestration/connections', {
        connection_formula_id: 'adyen-card',
        method: 'card',
        display_name: 'Adyen test',
        environment: 'test',
        fields: [
          { key: 'api_key', value: 'adyen_test_key' },
          { key: 'merchant_account', value: 'TestMerchant' },
          { key: 'hmac_key', value: HMAC_KEY },
        ],
        accepted_countries: ['NL'],
        accepted_currencies: ['EUR'],
      });
      expect(connection.status).toBe(201);
      const connectionId = connection.body!.id as string;
      for (let i = 0; i < 100; i++) {
        const got = await api(base, key, 'GET', `/orchestration/connections/${connectionId}`);
        if (got.body!.status === 'available') break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const token = await api(base, key, 'POST', '/tokenize', {
        type: 'card',
        data: { number: ADYEN_CARDS.visa, expiration_month: 3, expiration_year: 2030, cvc: '737' },
      });
      expect(token.status).toBe(201);

      fake.hangNext = 1;
      const cut = fetch(`${base}/orchestration/transactions`, {
        method: 'POST',
        headers: {
          'BT-API-KEY': key,
          'BT-IDEMPOTENCY-KEY': randomUUID(),
          'Content-Type': 'application/json',
        },
        body: JSON.stringify({
          amount: 2500,
          currency: 'EUR',
          connection_id: connectionId,
          token: token.body!.id,
          intent: 'capture',
        }),
      }).then(
        () => 'answered',
        () => 'cut off',
      );
      for (let i = 0; i < 200 && fake.posts(/^\/payments$/).length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 25));
      expect(fake.posts(/^\/payments$/)).toHaveLength(1);
      server.spawned.child.kill('SIGKILL');
      await server.spawned.exited;
      expect(await cut).toBe('cut off');

      const db = recorder.app.get(DataSource);
      const rows: { id: string; status: string; connection_transaction_id: string | null }[] = await db.query(
        'SELECT id, status, connection_transaction_id FROM transactions WHERE tenant_id = $1',
        [tenant.tenantId],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 'processing', connection_transaction_id: null });
      const payment = fake.payment(fake.posts(/^\/payments$/)[0].body.reference as string)!;
      expect(payment.status).toBe('captured');

      server = await startServer(port, databaseUrl, env);
      const delivered = await fake.sendNotifications(
        `${server.base}/orchestration/vendors/adyen/notifications`,
        HMAC_KEY,
        { items: fake.queued.filter((item) => item.pspReference === payment.pspReference) },
      );
      expect(delivered).toEqual({ status: 200, body: '[accepted]' });
      const after = await api(server.base, key, 'GET', `/orchestration/transactions/${rows[0].id}`);
      expect(after.body).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: 2500,
        connection_transaction_id: payment.pspReference,
      });
      expect(fake.posts(/^\/payments$/)).toHaveLength(1);
      expect(fake.payments.size).toBe(1);
    } finally {
      if (server) {
        server.spawned.child.kill('SIGKILL');
        await server.spawned.exited;
      }
      await recorder.close();
      await fake.close();
    }
  }, 180_000);
});
