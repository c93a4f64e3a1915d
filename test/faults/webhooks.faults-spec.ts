import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { TenantKeysService } from '../../src/common/crypto/tenant-keys.service';
import { newTenant, startApp, TestApp } from '../support/app';
import { freePort, stop } from '../support/processes';
import { createWebhookRow, payload, Receiver, recordEvents } from '../support/webhooks';
import { Server, startServer } from './support';

/**
 * kill -9 of the server while a webhook delivery is in flight, and while an event is committed but not
 * yet delivered: after a restart both are delivered, the first again with the same webhook-id once its
 * lease has run out. The events are recorded by an application of this process without jobs (no
 * worker), in the transaction a service would use; the spawned server only delivers.
 */
describe('webhook delivery across a server crash', () => {
  it('delivers the in-flight event again and the committed one after a restart', async () => {
    const receiver = await new Receiver().start();
    // The first request is held open (in flight when the server dies); every later one gets 200.
    const url = receiver.hook((_, n) => (n === 1 ? 'hang' : 200));
    const recorder: TestApp = await startApp({ JOBS_ENABLED: 'false' });
    const databaseUrl = process.env.DATABASE_URL!;
    const env = {
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_LEASE_SECONDS: '11',
      WEBHOOK_RETRY_SECONDS: '1',
      WEBHOOK_POLL_MS: '200',
    };
    const port = await freePort();
    let server: Server | undefined;
    try {
      const tenant = await newTenant(recorder);
      const db = recorder.app.get(DataSource);
      const hook = await createWebhookRow(db, recorder.app.get(TenantKeysService), tenant.tenantId, {
        url,
        events: ['token:updated'],
      });
      const event = (id: string) => ({
        tenantId: tenant.tenantId,
        type: 'token:updated' as const,
        entityId: id,
        data: { id },
      });

      server = await startServer(port, databaseUrl, env);
      const inFlight = randomUUID();
      await recordEvents(recorder, event(inFlight));
      await receiver.waitFor(() => receiver.to(url).length === 1, 10_000, 'the first attempt');
      server.spawned.child.kill('SIGKILL');
      await server.spawned.exited;
      const killedAt = Date.now();

      // Committed while no server runs: nothing has claimed it.
      const committed = randomUUID();
      await recordEvents(recorder, event(committed));

      server = await startServer(port, databaseUrl, env);
      const of = (id: string) =>
        receiver.to(url).filter((r) => (payload(r).data as { id: string }).id === id);
      await receiver.waitFor(() => of(committed).length === 1, 30_000, 'the committed event');
      await receiver.waitFor(() => of(inFlight).length === 2, 30_000, 'the in-flight event again');

      const [first, again] = of(inFlight);
      expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
      // The server records a delivery once the receiver has answered: a moment after the receiver saw it.
      const deliveries = (): Promise<{ status: string; attempts: number }[]> =>
        db.query(
          'SELECT status, attempts FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2 ORDER BY seq',
          [tenant.tenantId, hook.id],
        );
      let rows = await deliveries();
      for (let i = 0; i < 100 && rows.some((r) => r.status !== 'succeeded'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        rows = await deliveries();
      }
      expect(rows).toEqual([
        { status: 'succeeded', attempts: 2 },
        { status: 'succeeded', attempts: 1 },
      ]);
      process.stdout.write(
        `webhook crash: the committed event arrived ${of(committed)[0].at - killedAt} ms after the kill, ` +
          `the in-flight one again ${again.at - first.at} ms after its first attempt (lease 11 s)\n`,
      );
    } finally {
      if (server) await stop(server.spawned);
      await recorder.close();
      await receiver.stop();
    }
  });
});
