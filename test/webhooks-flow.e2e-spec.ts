import request from 'supertest';
import { DataSource } from 'typeorm';
import { TenantKeysService } from '../src/common/crypto/tenant-keys.service';
import { RetentionJob } from '../src/common/jobs/retention.job';
import { Webhook } from 'standardwebhooks';
import { newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { cardData, luhnCard } from './support/attacker';
import { createDatabase, dropDatabase } from './support/test-database';
import { waitFor } from './support/wait';
import { createWebhookRow, payload, Receiver } from './support/webhooks';

/**
 * Webhooks end to end through the API only: a webhook made with POST /webhooks, real changes made with
 * the API, and the receiver verifying each delivery with the `standardwebhooks` package. A database of
 * its own, so that this app's delivery worker sends this file's events only.
 */
describe('webhooks end to end', () => {
  let database: { name: string; url: string };
  let t: TestApp;
  let receiver: Receiver;
  let tenant: TestTenant;
  let pvt: string;

  beforeAll(async () => {
    database = await createDatabase('vault_test_webhooks_flow');
    receiver = await new Receiver().start();
    t = await startApp({
      DATABASE_URL: database.url,
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_DELIVERY_ENABLED: 'true',
      WEBHOOK_POLL_MS: '100',
    });
    tenant = await newTenant(t);
    pvt = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:update', 'token:delete'],
      })
    ).key;
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.stop();
    if (database) await dropDatabase(database.name);
  });

  it('a token created, updated and deleted through the API reaches the webhook signed, in order, masked', async () => {
    const url = receiver.hook();
    const made = await request(t.http)
      .post('/webhooks')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'vault events', url, events: ['token:created', 'token:updated', 'token:deleted'] })
      .expect(201);
    const verifier = new Webhook(made.body.secret as string);

    const number = luhnCard();
    // A refused change (a bad card among good ones) records nothing.
    await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', pvt)
      .send([
        { type: 'card', data: cardData(number) },
        { type: 'card', data: cardData('4242') },
      ])
      .expect(400);
    const token = (
      await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', pvt)
        .send({ type: 'card', data: cardData(number) })
    ).body;
    await request(t.http)
      .patch(`/tokens/${token.id}`)
      .set('BT-API-KEY', pvt)
      .send({ metadata: { order: '42' } })
      .expect(200);
    const read = (await request(t.http).get(`/tokens/${token.id}`).set('BT-API-KEY', pvt).expect(200)).body;
    await request(t.http).delete(`/tokens/${token.id}`).set('BT-API-KEY', pvt).expect(204);

    await receiver.waitFor(() => receiver.to(url).length >= 3, 10_000, 'three token events');
    const delivered = receiver.to(url);
    expect(delivered.map((d) => payload(d).type)).toEqual([
      'token:created',
      'token:updated',
      'token:deleted',
    ]);
    for (const d of delivered) {
      // Throws unless the signature, the id and the timestamp hold.
      const verified = verifier.verify(d.body, d.headers as Record<string, string>) as Record<
        string,
        unknown
      >;
      expect(verified).toEqual(payload(d));
      expect(d.headers['webhook-id']).toBe(payload(d).id);
      expect(d.headers['content-type']).toMatch(/^application\/json/);
      expect(payload(d)).toMatchObject({ tenant_id: tenant.tenantId, created_at: expect.any(String) });
      expect(d.body).not.toContain(number);
    }
    expect(payload(delivered[1]).data).toEqual(read);
    expect(() =>
      verifier.verify(`${delivered[0].body} `, delivered[0].headers as Record<string, string>),
    ).toThrow();

    // The deliveries list shows each as succeeded, one attempt, 2xx (the worker records the receiver's
    // answer just after the receiver has the request).
    const list = await waitFor(
      async () => {
        const res = await request(t.http)
          .get(`/webhooks/${made.body.id}/deliveries`)
          .set('BT-API-KEY', tenant.managementKey)
          .expect(200);
        return res.body.data.every((d: { status: string }) => d.status !== 'pending') && res;
      },
      { what: 'the three deliveries recorded' },
    );
    expect(list.body.data).toHaveLength(3);
    for (const item of list.body.data)
      expect(item).toMatchObject({ status: 'succeeded', attempts: 1, last_status_code: 200 });
  });

  it('the outbox keeps an event 30 days after its last delivery ended, and a pending one whatever its age', async () => {
    const db = t.app.get(DataSource);
    const hook = await createWebhookRow(db, t.app.get(TenantKeysService), tenant.tenantId, {
      url: receiver.hook(),
      events: ['token:created'],
      status: 'disabled',
    });
    const old = new Date(Date.now() - 31 * 24 * 3600_000);
    const events: Record<string, string> = {};
    for (const [name, status] of [
      ['ended', 'succeeded'],
      ['failed', 'failed'],
      ['waiting', 'pending'],
    ]) {
      const [{ id }]: { id: string }[] = await db.query(
        `INSERT INTO webhook_events (tenant_id, id, type, entity_id, data, created_at)
         VALUES ($1, gen_random_uuid(), 'token:created', $2, '{}', $3) RETURNING id`,
        [tenant.tenantId, name, old],
      );
      events[name] = id;
      await db.query(
        `INSERT INTO webhook_deliveries (tenant_id, id, webhook_id, event_id, event_type, entity_id, status,
                                         next_attempt_at, created_at, updated_at)
         VALUES ($1, gen_random_uuid(), $2, $3, 'token:created', $4, $5, $6, $6, $6)`,
        [tenant.tenantId, hook.id, id, name, status, old],
      );
    }
    await t.app.get(RetentionJob).runNow('webhook-events');
    const left: { entity_id: string }[] = await db.query(
      `SELECT e.entity_id FROM webhook_events e WHERE e.id = ANY($1::uuid[]) ORDER BY e.entity_id`,
      [Object.values(events)],
    );
    expect(left.map((r) => r.entity_id)).toEqual(['waiting']);
    const deliveries: { n: number }[] = await db.query(
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1`,
      [hook.id],
    );
    expect(deliveries[0].n).toBe(1);
  });
});
