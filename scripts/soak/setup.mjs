/*
 * What the soak runs against, all on 127.0.0.1: the cluster (bin/cluster.js: PgBouncer, two instances,
 * HAProxy), the Stripe fake of the tests (test/support/fake-stripe.ts, compiled with esbuild at start),
 * a webhook receiver that verifies every signature (Standard Webhooks), and an echo server the proxy
 * sends to. Then the tenant's side: the client's private application, the auditor's (a rule that
 * reveals every container), a stripe-card connection to the fake, a webhook, a pre-configured proxy.
 */
import { build } from 'esbuild';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { sleep } from './client.mjs';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { startCluster } = createRequire(import.meta.url)(join(ROOT, 'bin', 'cluster.js'));

/** The tests' FakeStripe class, compiled from its TypeScript (and the test helpers it imports) into the run directory. */
async function loadFakeStripe(dir) {
  const outfile = join(dir, 'fake-stripe.mjs');
  await build({
    entryPoints: [join(ROOT, 'test', 'support', 'fake-stripe.ts')],
    outfile,
    // The fake's own helpers (test/support) go in with it; packages stay imports (there are none).
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
  return (await import(pathToFileURL(outfile).href)).FakeStripe;
}

function listen(server) {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)),
  );
}

function close(server) {
  server.closeAllConnections?.();
  return new Promise((resolve) => server.close(() => resolve()));
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * The webhook receiver: each delivery verified against the secret (set once the webhook exists) before it
 * is parsed; answers 204, or 400 when the signature does not verify. `deliveries` is every verified one in
 * arrival order ({ id, type, entity, status, updatedAt, at }); `rejected` counts the others.
 */
export async function startReceiver() {
  const receiver = { deliveries: [], rejected: 0, secret: undefined, url: undefined };
  const server = createServer((req, res) => {
    readBody(req).then(
      (body) => {
        try {
          const event = new Webhook(receiver.secret).verify(body, req.headers);
          receiver.deliveries.push({
            id: req.headers['webhook-id'],
            type: event.type,
            entity: event.data?.id,
            status: event.data?.status,
            updatedAt: event.data?.updated_at,
            at: Date.now(),
          });
          res.writeHead(204).end();
        } catch {
          receiver.rejected++;
          res.writeHead(400).end();
        }
      },
      () => res.destroy(),
    );
  });
  receiver.url = `${await listen(server)}/hooks/soak`;
  receiver.close = () => close(server);
  return receiver;
}

/** The proxy's destination: answers 200 with the body it received. */
async function startEcho() {
  const server = createServer((req, res) => {
    readBody(req).then(
      (body) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(body),
      () => res.destroy(),
    );
  });
  const url = await listen(server);
  return { url, close: () => close(server) };
}

async function call(base, key, method, path, body) {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'BT-API-KEY': key, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 200 && res.status < 300) return text ? JSON.parse(text) : undefined;
    if (res.status < 500 || attempt === 5) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    await sleep(500);
  }
}

const CLIENT_PERMISSIONS = [
  'token:create',
  'token:read',
  'token:search',
  'token:use',
  'orchestration:connection_formulas',
  'orchestration:connections:create',
  'orchestration:connections:update',
  'orchestration:transactions:read',
  'orchestration:transaction:capture',
  'orchestration:transaction:refund',
];

/** The settings every instance gets besides the cluster's own. */
export function clusterEnv(stripeUrl) {
  return {
    VENDOR_BASE_URLS: `stripe-card=${stripeUrl}`,
    // The webhook receiver and the proxy's destination are on 127.0.0.1.
    OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    // One client key sends the whole load: the rate limit is not what is measured.
    RATE_LIMIT_PER_MINUTE: '100000000',
  };
}

/**
 * Starts everything and sets the tenant up. Answers { cluster, stripe, receiver, echo, dir, tenantId,
 * managementKey, clientKey, auditorKey, connectionId, proxyKey, webhookId, stop() }.
 */
export async function setUp({ log = () => undefined, keepLogs = false, ha = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'vault-soak-'));
  const FakeStripe = await loadFakeStripe(dir);
  const stripe = await new FakeStripe().start();
  const receiver = await startReceiver();
  const echo = await startEcho();
  let cluster;
  let stopped;
  const stop = () =>
    (stopped ??= (async () => {
      await cluster?.stop().catch((error) => log(`cluster stop: ${error.message}`));
      await Promise.all([stripe.close(), receiver.close(), echo.close()]);
      if (!keepLogs) rmSync(dir, { recursive: true, force: true });
    })());
  try {
    cluster = await startCluster({
      ha,
      databasePrefix: 'vault_soak',
      logLevel: 'warn',
      keepLogs,
      env: clusterEnv(stripe.baseUrl),
      log,
    });
    const base = cluster.url;
    const managementKey = cluster.managementKey;
    if (!managementKey) throw new Error('the cluster printed no management key');
    const tenantId = (await call(base, managementKey, 'GET', '/tenants/self')).id;
    const clientKey = (
      await call(base, managementKey, 'POST', '/applications', {
        name: 'soak client',
        type: 'private',
        permissions: CLIENT_PERMISSIONS,
      })
    ).key;
    // Reads every token in clear (docs/access-rules.md): a reveal rule on the root container.
    const auditorKey = (
      await call(base, managementKey, 'POST', '/applications', {
        name: 'soak auditor',
        type: 'private',
        permissions: ['orchestration:transactions:read'],
        rules: [
          { priority: 1, container: '/', permissions: ['token:read', 'token:search'], transform: 'reveal' },
        ],
      })
    ).key;
    const connection = await call(base, clientKey, 'POST', '/orchestration/connections', {
      connection_formula_id: 'stripe-card',
      method: 'card',
      environment: 'test',
      display_name: 'Stripe (fake)',
      fields: [{ key: 'secret_key', value: 'sk_test_fake' }],
      accepted_countries: ['US'],
      accepted_currencies: ['USD'],
    });
    for (let i = 0; ; i++) {
      const got = await call(base, clientKey, 'GET', `/orchestration/connections/${connection.id}`);
      if (got.status === 'available') break;
      if (got.status === 'failed' || i > 200) throw new Error(`the Stripe connection is ${got.status}`);
      await sleep(100);
    }
    const webhook = await call(base, managementKey, 'POST', '/webhooks', {
      name: 'soak receiver',
      url: receiver.url,
      events: ['token:created', 'transaction:created', 'transaction:updated'],
    });
    receiver.secret = webhook.secret;
    const proxy = await call(base, managementKey, 'POST', '/proxies', {
      name: 'soak echo',
      destination_url: `${echo.url}/echo`,
      require_auth: true,
    });
    return {
      cluster,
      stripe,
      receiver,
      echo,
      dir,
      tenantId,
      managementKey,
      clientKey,
      auditorKey,
      connectionId: connection.id,
      proxyKey: proxy.key,
      webhookId: webhook.id,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
