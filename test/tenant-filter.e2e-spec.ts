import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import request from 'supertest';
import { RetentionJob } from '../src/common/jobs/retention.job';
import { TenantKeysService } from '../src/common/crypto/tenant-keys.service';
import { WebhookDeliveryWorker } from '../src/modules/webhooks/delivery/webhook-delivery.worker';
import { AuditCheckpointer } from '../src/common/audit/audit-checkpointer.service';
import { SettlementService } from '../src/modules/orchestration/transactions/settlement.service';
import { RelaySettlementService } from '../src/modules/orchestration/relay/relay-settlement.service';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { Destination } from './support/destination';
import { authorizedSession, cardData, patchToken, tokenize } from './support/attacker';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { createWebhookRow, recordEvents } from './support/webhooks';
import { createDatabase, dropDatabase } from './support/test-database';
import { waitFor } from './support/wait';
import { GooglePayTestSender } from './support/wallets/google-pay-sender';

const google = new GooglePayTestSender();

/** The tables that hold one tenant's rows (docs/scaling.md): distributed by tenant_id on Citus. */
const TENANT_TABLES = [
  'tokens',
  'token_search_indexes',
  'token_cvcs',
  'sessions',
  'applications',
  'api_keys',
  'connections',
  'transactions',
  'refunds',
  'audit_logs',
  'audit_chain_heads',
  'audit_trees',
  'audit_tree_tiles',
  'audit_leaves',
  'audit_checkpoints',
  'idempotency_records',
  'proxies',
  'webhooks',
  'webhook_events',
  'webhook_deliveries',
  'wallet_merchant_keys',
  'wallet_replays',
  'relay_refunds',
];
const TOUCHES = new RegExp(`\\b(FROM|JOIN|UPDATE|INTO)\\s+"?(${TENANT_TABLES.join('|')})"?(\\s|$|\\()`, 'i');

/**
 * The statements that may leave out tenant_id, each for a reason: work across every tenant on purpose
 * (retention, settlement, verification sweeps), or a lookup made before the tenant is known (by the
 * digest of a secret the caller holds).
 */
const ACROSS_TENANTS: [RegExp, string][] = [
  [
    /^DELETE FROM "?(sessions|tokens|token_cvcs|idempotency_records|audit_logs|webhook_events|wallet_replays)"?( \w+)? WHERE "?(\w+\.)?(expires_at|created_at)/i,
    'retention',
  ],
  [/\bkey_hash\b/, 'API and session keys are looked up by their digest before the tenant is known'],
  [/\bapproval_token_hash = \$1\b/, "the buyer's approval link is all the page has"],
  [/FROM "proxies" .*"key" = \$1/, 'a request through a pre-configured proxy names it by its key alone'],
  [/t\.status IN \('capture_pending', 'authorization_void_pending'\)/, 'the settlement sweep'],
  [
    /FROM refunds r JOIN .* WHERE r\.status = 'processing' AND r\.updated_at <= \$1/,
    'the settlement sweep (refunds)',
  ],
  [
    /FROM relay_refunds r JOIN .* WHERE r\.status = 'processing' AND r\.updated_at <= \$1/,
    'the settlement sweep (relay refunds)',
  ],
  [
    /FROM relay_refunds WHERE id = \$1$/,
    "a vendor's notification names the relay refund by its reference alone (then verified with its connection's key)",
  ],
  [
    /JOIN connections c ON c\.tenant_id = t\.tenant_id AND c\.id = t\.connection_id WHERE t\.id = \$1$/,
    "a vendor's notification names the transaction by its reference alone (then verified with its connection's key)",
  ],
  [
    /FROM connections WHERE status = 'pending' AND deleted_at IS NULL ORDER BY updated_at/,
    'the verification sweep',
  ],
  [
    /^WITH due AS \( SELECT d\.tenant_id, d\.id FROM webhook_deliveries d .* FOR UPDATE OF d SKIP LOCKED/,
    "the webhook delivery workers' claim of due deliveries (each row then names its tenant)",
  ],
];

describe('every statement on a tenant-scoped table names its tenant', () => {
  let t: TestApp;
  let destination: Destination;
  let database: { name: string; url: string };
  const seen = new Set<string>();
  // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be called with the client as `this`
  const original = Client.prototype.query;

  beforeAll(async () => {
    // Every statement of this process goes through pg's Client (the pool's clients are ListeningClients).
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      const first = args[0] as string | { text?: string } | undefined;
      const text = typeof first === 'string' ? first : first?.text;
      if (text) seen.add(text.replace(/\s+/g, ' ').trim());
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof Client.prototype.query;
    destination = await new Destination().start();
    // A database of its own: its webhook delivery worker claims every tenant's deliveries.
    database = await createDatabase('vault_test_tenant_filter');
    t = await startApp({
      DATABASE_URL: database.url,
      GOOGLE_PAY_ROOT_KEYS: google.writeRootKeysFile(),
      WEBHOOK_DELIVERY_ENABLED: 'true',
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_SECONDS: '0',
      WEBHOOK_POLL_MS: '100',
    });
    // The migrations of the new database span tenants by design; what is checked starts here.
    seen.clear();
  });

  afterAll(async () => {
    Client.prototype.query = original;
    await t.close();
    await destination.stop();
    await dropDatabase(database.name);
  });

  it('through tokens, sessions, applications, payments, logs, idempotency and the jobs', async () => {
    const tenant = await newTenant(t);
    const app = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: [
        ...ORCHESTRATION_PERMISSIONS,
        'token:search',
        'token:update',
        'token:delete',
        'orchestration:relay',
      ],
    });
    const pub = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const key = app.key;

    // Tokens: create (deduplicated, indexed, with a CVC), read, list, search, patch, delete.
    const element = {
      type: 'card',
      data: cardData('4242424242424242', { cvc: '123' }),
      search_indexes: ['{{ data.number | last4 }}'],
      deduplicate_token: true,
    };
    const card = (await tokenize(t, key, element).expect(201)).body;
    await tokenize(t, key, element).expect(201);
    await request(t.http).get(`/tokens/${card.id}`).set('BT-API-KEY', key).expect(200);
    await request(t.http).get('/tokens').set('BT-API-KEY', key).expect(200);
    await request(t.http).get('/v2/tokens').set('BT-API-KEY', key).expect(200);
    await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', key)
      .send({ query: 'data:4242' })
      .expect(200);
    await request(t.http)
      .post('/v2/tokens/search')
      .set('BT-API-KEY', key)
      .send({ query: `id:${card.id}` })
      .expect(200);
    const other = (await tokenize(t, key, { type: 'token', data: 'x' }).expect(201)).body;
    await patchToken(t, key, other.id, { metadata: { a: 'b' } }).expect(200);
    await request(t.http).delete(`/tokens/${other.id}`).set('BT-API-KEY', key).expect(204);

    // Sessions: create, authorize, use.
    const session = await authorizedSession(t, pub.key, key, { permissions: ['token:create'] });
    await tokenize(t, session, { type: 'token', data: 'y' }).expect(201);

    // Applications and keys.
    const extra = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    await request(t.http)
      .put(`/applications/${extra.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'renamed', permissions: ['token:read'] })
      .expect(200);
    const created = await request(t.http)
      .post(`/applications/${extra.id}/keys`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(201);
    await request(t.http)
      .delete(`/applications/${extra.id}/keys/${created.body.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(204);
    await request(t.http).get('/applications').set('BT-API-KEY', tenant.managementKey).expect(200);
    await request(t.http)
      .delete(`/applications/${extra.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(204);

    // Payments: a connection, an idempotent authorization, capture, refund, another voided; lists.
    const connection = await newConnection(t, key, { currencies: ['USD'] });
    const pay = (idem: string) =>
      request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .set('BT-IDEMPOTENCY-KEY', idem)
        .send({ amount: 1000, currency: 'USD', connection_id: connection.id, token: card.id });
    const idem = randomUUID();
    const tx = (await pay(idem).expect(201)).body;
    await pay(idem).expect(201);
    const op = (id: string, what: string, body: object = {}) =>
      request(t.http).post(`/orchestration/transactions/${id}/${what}`).set('BT-API-KEY', key).send(body);
    await op(tx.id, 'capture').expect(200);
    await op(tx.id, 'refunds', { amount: 100 }).expect(201);
    const second = (await pay(randomUUID()).expect(201)).body;
    await op(second.id, 'void').expect(200);
    await request(t.http).get('/orchestration/transactions').set('BT-API-KEY', key).expect(200);
    await request(t.http)
      .get(`/orchestration/transactions/${tx.id}/refunds`)
      .set('BT-API-KEY', key)
      .expect(200);
    await request(t.http).get('/orchestration/connections').set('BT-API-KEY', key).expect(200);
    // A relay refund (a payment made at the vendor before the migration): create, get, list.
    const relayed = (
      await request(t.http)
        .post('/orchestration/relay/refunds')
        .set('BT-API-KEY', key)
        .set('BT-IDEMPOTENCY-KEY', randomUUID())
        .send({ connection_id: connection.id, vendor_payment_id: 'pi_3Relay', amount: 100, currency: 'USD' })
        .expect(201)
    ).body;
    await request(t.http)
      .get(`/orchestration/relay/refunds/${relayed.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    await request(t.http).get('/orchestration/relay/refunds').set('BT-API-KEY', key).expect(200);
    await request(t.http)
      .delete(`/orchestration/connections/${connection.id}`)
      .set('BT-API-KEY', key)
      .expect(204);

    // Proxies: create, list, get, replace, patch; a request through one and through the ephemeral proxy.
    const mgt = tenant.managementKey;
    const proxy = (
      await request(t.http)
        .post('/proxies')
        .set('BT-API-KEY', mgt)
        .send({ name: 'p', destination_url: destination.url('/v1') })
        .expect(201)
    ).body;
    await request(t.http).get('/proxies').set('BT-API-KEY', mgt).expect(200);
    await request(t.http).get(`/proxies/${proxy.id}`).set('BT-API-KEY', mgt).expect(200);
    await request(t.http)
      .put(`/proxies/${proxy.id}`)
      .set('BT-API-KEY', mgt)
      .send({ name: 'p2', destination_url: destination.url('/v2') })
      .expect(200);
    await request(t.http)
      .patch(`/proxies/${proxy.id}`)
      .set('BT-API-KEY', mgt)
      .send({ name: 'p3' })
      .expect(204);
    await request(t.http)
      .post('/proxy/pay')
      .set('BT-PROXY-KEY', proxy.key)
      .set('BT-API-KEY', key)
      .send({ n: `{{ ${card.id} | json: '$.number' }}` })
      .expect(200);
    await request(t.http)
      .post('/proxy')
      .set('BT-PROXY-URL', destination.url())
      .set('BT-API-KEY', key)
      .send({ n: `{{ ${card.id} }}` })
      .expect(200);
    await request(t.http).delete(`/proxies/${proxy.id}`).set('BT-API-KEY', mgt).expect(204);

    // Webhooks: an event delivered to one webhook, and failed for good at another (one retry, at once).
    const db = t.app.get(DataSource);
    const hooks = [destination.url('/hook'), destination.url('/status/500')];
    for (const url of hooks)
      await createWebhookRow(db, t.app.get(TenantKeysService), tenant.tenantId, {
        url,
        events: ['token:created'],
      });
    await recordEvents(t, {
      tenantId: tenant.tenantId,
      type: 'token:created',
      entityId: card.id,
      data: { id: card.id },
    });
    await waitFor(
      async () => {
        const rows: { status: string }[] = await db.query(
          'SELECT status FROM webhook_deliveries WHERE tenant_id = $1 ORDER BY status',
          [tenant.tenantId],
        );
        return rows.map((r) => r.status).join() === 'failed,succeeded';
      },
      { timeoutMs: 15_000, intervalMs: 50, what: 'one delivery failed and one succeeded' },
    );
    await t.app.get(WebhookDeliveryWorker).deliverDue();

    // Wallets: merchant keys, and a Google Pay payload made into a token (its transaction id recorded).
    const walletKey = await request(t.http)
      .post('/wallets/google-pay/merchant-keys')
      .set('BT-API-KEY', tenant.managementKey)
      .send({ gateway_merchant_id: 'tenant-filter' })
      .expect(201);
    await request(t.http)
      .get('/wallets/google-pay/merchant-keys')
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    const appleKey = await request(t.http)
      .post('/wallets/apple-pay/merchant-keys')
      .set('BT-API-KEY', tenant.managementKey)
      .expect(201);
    await request(t.http)
      .get(`/wallets/apple-pay/merchant-keys/${appleKey.body.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    await request(t.http)
      .post('/wallets/google-pay/tokens')
      .set('BT-API-KEY', key)
      .send({
        token: google.token({
          recipientPublicKey: walletKey.body.public_key,
          gatewayMerchantId: 'tenant-filter',
        }),
      })
      .expect(201);
    await request(t.http)
      .delete(`/wallets/google-pay/merchant-keys/${walletKey.body.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(204);

    // The audit log, and the jobs.
    await request(t.http).get('/logs').set('BT-API-KEY', tenant.managementKey).expect(200);
    await t.app.get(SettlementService).settle();
    await t.app.get(RelaySettlementService).settle();
    await t.app.get(AuditCheckpointer).run();
    const retention = t.app.get(RetentionJob);
    for (const name of [
      'expired-tokens',
      'cvc-retention',
      'expired-sessions',
      'log-retention',
      'idempotency-records',
      'webhook-events',
      'wallet-replays',
    ])
      await retention.runNow(name);

    const touching = [...seen].filter((sql) => TOUCHES.test(sql));
    expect(touching.length).toBeGreaterThan(40);
    const unscoped = touching.filter(
      (sql) => !/\btenant_id\b/.test(sql) && !ACROSS_TENANTS.some(([pattern]) => pattern.test(sql)),
    );
    expect(unscoped).toEqual([]);
  });
});
