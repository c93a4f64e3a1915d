import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { Clock } from '../src/common/jobs/clock';
import { ExclusiveJobRunner } from '../src/common/jobs/exclusive';
import { TenantKeysService } from '../src/common/crypto/tenant-keys.service';
import { SettlementService } from '../src/modules/orchestration/transactions/settlement.service';
import { WebhookDeliveryWorker } from '../src/modules/webhooks/delivery/webhook-delivery.worker';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from './support/app';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { createDatabase, dropDatabase } from './support/test-database';
import { createWebhookRow, Receiver, recordEvents } from './support/webhooks';

/** The value of one sample of the exposition (0 when absent): `name` with at least these labels. */
function sample(body: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of body.split('\n')) {
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const got = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([label, value]) => got[label] === value)) return Number(match[3]);
  }
  return 0;
}

describe('metrics', () => {
  it('GET /metrics is an unknown path (404) unless METRICS_ENABLED=true', async () => {
    const t = await startApp();
    try {
      expectProblem(await request(t.http).get('/metrics'), 404);
    } finally {
      await t.close();
    }
  });

  /**
   * With METRICS_ENABLED=true, on a database of its own: the delivery round below claims every due
   * delivery of its database, and the settlement job's lock is not shared with other files' servers.
   */
  describe('enabled', () => {
    let database: { name: string; url: string };
    let t: TestApp;
    let receiver: Receiver;
    let key: string;
    let managementKey: string;
    /** Every secret and id the tests below saw: none may appear in the exposition. */
    const secrets: string[] = [];

    beforeAll(async () => {
      database = await createDatabase('vault_test_metrics');
      receiver = await new Receiver().start();
      t = await startApp({
        METRICS_ENABLED: 'true',
        DATABASE_URL: database.url,
        OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
        WEBHOOK_RETRY_SECONDS: '1',
      });
      const tenant = await newTenant(t);
      managementKey = tenant.managementKey;
      key = (
        await newApplication(t, managementKey, { type: 'private', permissions: ORCHESTRATION_PERMISSIONS })
      ).key;
      secrets.push(managementKey, key, tenant.tenantId);
    });
    afterAll(async () => {
      await t?.close();
      await receiver?.stop();
      if (database) await dropDatabase(database.name);
    });

    const scrape = async (): Promise<string> => {
      const res = await request(t.http).get('/metrics').expect(200);
      return res.text;
    };
    const tokenize = (body: object) => request(t.http).post('/tokenize').set('BT-API-KEY', key).send(body);
    const card = (number: string) => ({
      type: 'card',
      data: { number, expiration_month: 12, expiration_year: 2030, cvc: '123' },
    });

    it('serves the Prometheus text format, with no API key, outside the API document', async () => {
      const res = await request(t.http).get('/metrics').expect(200);
      // Express puts the charset first; Prometheus reads the parameters in any order.
      expect(res.headers['content-type']).toMatch(/^text\/plain; /);
      expect(res.headers['content-type'].split('; ').sort()).toEqual([
        'charset=utf-8',
        'text/plain',
        'version=0.0.4',
      ]);
      expect(res.headers['cache-control']).toBe('no-store');
      for (const [name, type] of [
        ['http_request_duration_seconds', 'histogram'],
        ['vault_tokens_created_total', 'counter'],
        ['vault_transactions_total', 'counter'],
        ['vault_payment_attempts_total', 'counter'],
        ['vault_job_runs_total', 'counter'],
        ['vault_job_failures_total', 'counter'],
        ['vault_webhook_deliveries_total', 'counter'],
        ['vault_db_pool_total', 'gauge'],
        ['vault_db_pool_idle', 'gauge'],
        ['vault_db_pool_waiting', 'gauge'],
        ['vault_db_pool_max', 'gauge'],
        // prom-client's defaults: the process and its event loop.
        ['process_cpu_user_seconds_total', 'counter'],
        ['process_resident_memory_bytes', 'gauge'],
        ['nodejs_eventloop_lag_seconds', 'gauge'],
      ])
        expect(res.text).toContain(`# TYPE ${name} ${type}\n`);
      // A key sent along is neither needed nor harmful.
      await request(t.http).get('/metrics').set('BT-API-KEY', key).expect(200);
      const document = await request(t.http).get('/openapi.json').expect(200);
      expect(Object.keys(document.body.paths)).toContain('/health/live');
      expect(Object.keys(document.body.paths)).not.toContain('/metrics');
    });

    it('counts tokens created by type, once committed; deduplicated answers and refused requests create none', async () => {
      const before = await scrape();
      const res = await tokenize({
        first: card('4242424242424242'),
        second: card('5555555555554444'),
        third: card('6011111111111117'),
        note: { type: 'token', data: 'a note' },
      }).expect(201);
      secrets.push('4242424242424242', '5555555555554444', '6011111111111117', res.body.first.id);
      let after = await scrape();
      expect(sample(after, 'vault_tokens_created_total', { type: 'card' })).toBe(
        sample(before, 'vault_tokens_created_total', { type: 'card' }) + 3,
      );
      expect(sample(after, 'vault_tokens_created_total', { type: 'token' })).toBe(
        sample(before, 'vault_tokens_created_total', { type: 'token' }) + 1,
      );

      // The same card twice with deduplication: one token made, the second answer is that token.
      const twice = { ...card('4000056655665556'), deduplicate_token: true };
      await tokenize(twice).expect(201);
      await tokenize(twice).expect(201);
      // Refused (an invalid number; an id already taken): nothing committed, nothing counted.
      await tokenize(card('4242424242424241')).expect(400);
      await tokenize({ id: res.body.first.id, ...card('4111111111111111') }).expect(409);
      const cards = sample(after, 'vault_tokens_created_total', { type: 'card' });
      after = await scrape();
      expect(sample(after, 'vault_tokens_created_total', { type: 'card' })).toBe(cards + 1);
    });

    it('labels requests by route template and status, never by the concrete path', async () => {
      const id = (await tokenize({ type: 'token', data: 'labelled' }).expect(201)).body.id as string;
      const missing = randomUUID();
      const unknown = randomUUID();
      secrets.push(id, missing, unknown);
      const before = await scrape();
      await request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', key).expect(200);
      await request(t.http).get(`/tokens/${missing}`).set('BT-API-KEY', key).expect(404);
      await request(t.http).get(`/tokens/${id}`).expect(401);
      await request(t.http).get(`/no/such/path/${unknown}`).set('BT-API-KEY', key).expect(404);
      const after = await scrape();
      const count = (body: string, labels: Record<string, string>) =>
        sample(body, 'http_request_duration_seconds_count', labels);
      for (const labels of [
        { method: 'GET', route: '/tokens/:id', status: '200' },
        { method: 'GET', route: '/tokens/:id', status: '404' },
        { method: 'GET', route: '/tokens/:id', status: '401' },
        { method: 'GET', route: 'unmatched', status: '404' },
        { method: 'POST', route: '/tokenize', status: '201' },
      ])
        expect({ labels, delta: count(after, labels) - count(before, labels) }).toEqual({
          labels,
          delta: labels.method === 'POST' ? 0 : 1,
        });
      expect(count(after, { method: 'POST', route: '/tokenize', status: '201' })).toBeGreaterThan(0);
      // The scrapes themselves are requests too.
      expect(count(after, { method: 'GET', route: '/metrics', status: '200' })).toBeGreaterThan(0);
      expect(after).toMatch(
        /http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/tokens\/:id",status="200"\}/,
      );
      for (const value of [id, missing, unknown]) expect(after).not.toContain(value);
    });

    it('counts transactions entering each status', async () => {
      const stripe = (await newConnection(t, key, { currencies: ['USD'], countries: ['US'] })).id;
      const token = (await tokenize(card('4242424242424242')).expect(201)).body.id as string;
      secrets.push(token);
      const before = await scrape();
      const tx = await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .send({ amount: 1299, currency: 'USD', connection_id: stripe, token })
        .expect(201);
      expect(tx.body.status).toBe('authorization_succeeded');
      secrets.push(tx.body.id);
      let after = await scrape();
      const delta = (status: string) =>
        sample(after, 'vault_transactions_total', { status }) -
        sample(before, 'vault_transactions_total', { status });
      expect(delta('processing')).toBe(1);
      expect(delta('authorization_succeeded')).toBe(1);
      // Its one attempt, by formula and outcome.
      const attempts = (text: string) =>
        sample(text, 'vault_payment_attempts_total', { formula: 'stripe-card', outcome: 'succeeded' });
      expect(attempts(after) - attempts(before)).toBe(1);

      await request(t.http)
        .post(`/orchestration/transactions/${tx.body.id}/capture`)
        .set('BT-API-KEY', key)
        .send({})
        .expect(200);
      after = await scrape();
      expect(delta('capture_succeeded')).toBe(1);
      expect(after).not.toContain(tx.body.id);
    });

    it('counts job runs and failures by job', async () => {
      const before = await scrape();
      // The settlement job runs every second; a direct tick while the scheduled one runs is skipped.
      const deadline = Date.now() + 10_000;
      let after = before;
      while (
        sample(after, 'vault_job_runs_total', { job: 'settlement' }) <=
          sample(before, 'vault_job_runs_total', { job: 'settlement' }) &&
        Date.now() < deadline
      ) {
        await t.app.get(SettlementService).tick();
        after = await scrape();
      }
      expect(sample(after, 'vault_job_runs_total', { job: 'settlement' })).toBeGreaterThan(
        sample(before, 'vault_job_runs_total', { job: 'settlement' }),
      );
      expect(sample(after, 'vault_job_failures_total', { job: 'settlement' })).toBe(
        sample(before, 'vault_job_failures_total', { job: 'settlement' }),
      );

      await t.app.get(ExclusiveJobRunner).runAlone('metrics-test', 987_654_321, async () => {
        throw new Error('this job fails');
      });
      after = await scrape();
      expect(sample(after, 'vault_job_runs_total', { job: 'metrics-test' })).toBe(1);
      expect(sample(after, 'vault_job_failures_total', { job: 'metrics-test' })).toBe(1);
    });

    it('counts webhook delivery attempts by outcome', async () => {
      const tenant = await newTenant(t, 'webhook tenant');
      const db = t.app.get(DataSource);
      const keys = t.app.get(TenantKeysService);
      const ok = await createWebhookRow(db, keys, tenant.tenantId, {
        url: receiver.hook(),
        events: ['token:created'],
      });
      const failing = await createWebhookRow(db, keys, tenant.tenantId, {
        url: receiver.hook(() => 500),
        events: ['token:created'],
      });
      secrets.push(ok.secret, failing.secret);
      const before = await scrape();
      const entityId = randomUUID();
      await recordEvents(t, {
        tenantId: tenant.tenantId,
        type: 'token:created',
        entityId,
        data: { id: entityId },
      });
      const worker = t.app.get(WebhookDeliveryWorker);
      expect(await worker.deliverDue()).toBe(2);
      let after = await scrape();
      const delta = (outcome: string) =>
        sample(after, 'vault_webhook_deliveries_total', { outcome }) -
        sample(before, 'vault_webhook_deliveries_total', { outcome });
      expect([delta('succeeded'), delta('retried'), delta('failed')]).toEqual([1, 1, 0]);
      // WEBHOOK_RETRY_SECONDS=1: one retry a second later (on the service's clock), then the delivery
      // has failed for good.
      const clock = t.app.get(Clock);
      clock.advance(1100);
      try {
        expect(await worker.deliverDue()).toBe(1);
      } finally {
        clock.reset();
      }
      after = await scrape();
      expect([delta('succeeded'), delta('retried'), delta('failed')]).toEqual([1, 1, 1]);
    });

    it('reports the database pool at scrape time', async () => {
      const body = await scrape();
      expect(sample(body, 'vault_db_pool_max')).toBe(10);
      expect(sample(body, 'vault_db_pool_total')).toBeGreaterThanOrEqual(1);
      expect(sample(body, 'vault_db_pool_total')).toBeLessThanOrEqual(10);
      expect(sample(body, 'vault_db_pool_idle')).toBeLessThanOrEqual(sample(body, 'vault_db_pool_total'));
      expect(body).toMatch(/^vault_db_pool_waiting \d+$/m);
    });

    it('holds no key, card number, id or secret seen above', async () => {
      const body = await scrape();
      expect(secrets.length).toBeGreaterThan(10);
      for (const secret of secrets) expect(body).not.toContain(secret);
      // The service's label values come from fixed sets: methods, route templates, statuses, names.
      const ours = body.split('\n').filter((line) => /^(vault_|http_)/.test(line));
      expect(ours.length).toBeGreaterThan(20);
      for (const line of ours)
        for (const [, label, value] of line.matchAll(/(\w+)="([^"]*)"/g))
          expect(`${label}=${value}`).toMatch(
            label === 'route'
              ? /^route=(\/[\w/:{}*-]*|unmatched)$/
              : /^\w+=([a-z_:.0-9+-]*|GET|POST|PUT|PATCH|DELETE)$/i,
          );
    });
  });
});
