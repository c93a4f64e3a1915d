import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import createClient from 'openapi-fetch';
import type { paths } from './generated/vault-api';
import { newTenant, startApp, TestApp } from './support/app';
import { freePort, ROOT } from './support/processes';

/**
 * A client generated from openapi.json (openapi-typescript types + openapi-fetch) walks the main
 * journey against a running server: if the document were wrong, this would not compile or would fail.
 */
describe('generated TypeScript client (openapi-typescript + openapi-fetch)', () => {
  let t: TestApp;
  let baseUrl: string;
  let managementKey: string;

  beforeAll(async () => {
    const port = await freePort();
    t = await startApp({ PORT: String(port) });
    await t.app.listen(port, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${port}`;
    managementKey = (await newTenant(t, 'generated client')).managementKey;
  });
  afterAll(() => t.close());

  it('the committed client types are generated from the committed openapi.json', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vault-client-'));
    try {
      const out = join(dir, 'vault-api.d.ts');
      execFileSync(
        process.execPath,
        [
          join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
          'openapi.json',
          '--redocly',
          'test/generated/redocly.yaml',
          '--default-non-nullable',
          'false',
          '-o',
          out,
        ],
        { cwd: ROOT, stdio: 'pipe' },
      );
      expect(readFileSync(out, 'utf8')).toBe(
        readFileSync(join(ROOT, 'test/generated/vault-api.d.ts'), 'utf8'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('walks the journey: applications, tokenize, connection, authorize, capture, refund, logs', async () => {
    const management = createClient<paths>({ baseUrl, headers: { 'BT-API-KEY': managementKey } });
    const created = await management.POST('/applications', {
      body: {
        name: 'Checkout',
        type: 'private',
        permissions: [
          'token:create',
          'token:use',
          'orchestration:connection_formulas',
          'orchestration:connections:create',
          'orchestration:connections:update',
          'orchestration:transactions:read',
          'orchestration:transaction:capture',
          'orchestration:transaction:refund',
        ],
      },
    });
    expect(created.response.status).toBe(201);
    const privateKey = created.data!.key!;
    const api = createClient<paths>({ baseUrl, headers: { 'BT-API-KEY': privateKey } });

    const formulas = await api.GET('/orchestration/connection_formulas');
    const stripe = formulas.data!.find((f) => f.id === 'stripe-card')!;
    expect(stripe.supported_features.partial_capture).toBe(true);

    const token = await api.POST('/tokens', {
      body: {
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' },
      },
    });
    expect(token.response.status).toBe(201);
    expect(token.data!.mask!.number).toBe('XXXXXXXXXXXX4242');

    const tokenized = await api.POST('/tokenize', { body: { email: 'jane@example.com' } });
    expect(tokenized.response.status).toBe(201);

    const connection = await api.POST('/orchestration/connections', {
      body: {
        connection_formula_id: stripe.id,
        method: stripe.method,
        display_name: 'Stripe',
        fields: stripe.fields.map((f) => ({ key: f.key, value: 'sk_test_generated' })),
        accepted_countries: ['US'],
        accepted_currencies: ['USD'],
      },
    });
    expect(connection.data!.status).toBe('pending');
    const connectionId = connection.data!.id;
    let status: string = connection.data!.status;
    for (let i = 0; i < 50 && status === 'pending'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const got = await api.GET('/orchestration/connections/{id}', {
        params: { path: { id: connectionId } },
      });
      status = got.data!.status;
    }
    expect(status).toBe('available');

    const authorized = await api.POST('/orchestration/transactions', {
      params: { header: { 'BT-IDEMPOTENCY-KEY': randomUUID() } },
      body: { amount: 2500, currency: 'USD', connection_id: connectionId, token: token.data!.id },
    });
    expect(authorized.response.status).toBe(201);
    const tx = authorized.data!;
    expect(tx.status).toBe('authorization_succeeded');

    const captured = await api.POST('/orchestration/transactions/{id}/capture', {
      params: { path: { id: tx.id } },
      body: { amount: 2000 },
    });
    expect(captured.data!.status).toBe('capture_succeeded');
    expect(captured.data!.captured_amount).toBe(2000);

    const refund = await api.POST('/orchestration/transactions/{id}/refunds', {
      params: { path: { id: tx.id } },
      body: { amount: 500 },
    });
    expect(refund.response.status).toBe(201);
    expect(refund.data!.status).toBe('succeeded');

    const refused = await api.POST('/orchestration/transactions/{id}/capture', {
      params: { path: { id: tx.id } },
      body: {},
    });
    expect(refused.response.status).toBe(409);
    expect(refused.response.headers.get('content-type')).toMatch(/problem\+json/);

    const logs = await management.GET('/logs', {
      params: { query: { entity_type: 'transaction', entity_id: tx.id, size: 10 } },
    });
    expect(logs.data!.data.map((l) => l.operation)).toEqual(['update', 'update', 'create']);
    const types = await management.GET('/logs/entity-types');
    expect(types.data!.map((e) => e.value)).toContain('transaction');
  });
});
