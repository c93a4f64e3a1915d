import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import createClient from 'openapi-fetch';
import type { paths } from './generated/vault-api';
import { newTenant, startApp, TestApp } from './support/app';
import { freePort, ROOT } from './support/processes';
import { ignoreTimeout, waitFor } from './support/wait';

/**
 * What a user writes first with a generated client: every body holds only what it must (no `page`,
 * `size`, `environment`, `intent`, `payment_source` or `transform`, which have defaults), and the
 * tokenize answer has a type to narrow, not `unknown`.
 */
const DEFAULT_CLIENT_PROGRAM = `
import createClient from 'openapi-fetch';
import type { paths } from './vault-api';

type IsUnknown<T> = unknown extends T ? true : false;

export async function firstHour(key: string): Promise<string[]> {
  const api = createClient<paths>({ baseUrl: 'http://127.0.0.1:3000', headers: { 'BT-API-KEY': key } });

  const tokenized = await api.POST('/tokenize', {
    body: {
      card: { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 } },
      email: 'jane@example.com',
    },
  });
  const answer = tokenized.data!;
  const described: IsUnknown<typeof answer> = false;
  const ids: string[] = [];
  if (!Array.isArray(answer) && !('tenant_id' in answer)) {
    const email = answer['email'];
    if (typeof email === 'string') ids.push(email);
    const card = answer['card'];
    if (card && typeof card === 'object' && !Array.isArray(card) && 'fingerprint' in card) ids.push(String(card.id));
  }

  const found = await api.POST('/tokens/search', { body: { query: 'type:card' } });
  ids.push(...found.data!.data.map((token) => token.id));
  const next = await api.POST('/v2/tokens/search', { body: { query: 'type:card' } });
  ids.push(...next.data!.data.map((token) => token.id));
  const listed = await api.GET('/orchestration/transactions');
  ids.push(...listed.data!.data.map((transaction) => transaction.id));

  const connection = await api.POST('/orchestration/connections', {
    body: {
      connection_formula_id: 'stripe-card',
      method: 'card',
      display_name: 'Stripe',
      fields: [{ key: 'secret_key', value: 'sk_test_x' }],
      accepted_countries: ['US'],
      accepted_currencies: ['USD'],
    },
  });
  const transaction = await api.POST('/orchestration/transactions', {
    body: { amount: 2500, currency: 'USD', connection_id: connection.data!.id, token: ids[0] },
  });
  ids.push(transaction.data!.id, transaction.data!.status);

  const application = await api.POST('/applications', {
    body: { name: 'Reader', type: 'private', rules: [{ priority: 1, container: '/', permissions: ['token:read'] }] },
  });
  ids.push(application.data!.id);
  return described ? [] : ids;
}
`;

/**
 * Uses the tokenize answer's recursive type (`TokenizedValue`) of a generated client, as `tsc --strict`
 * checks it without `skipLibCheck`: a type that refers to itself where TypeScript cannot defer it fails
 * (TS2502) in the generated file, and becomes `any` where the file is not checked. Each `@ts-expect-error`
 * line fails if the type is `any`.
 */
const TOKENIZED_VALUE_PROGRAM = `
import type { components, operations } from './vault-api';
import type { components as Committed } from './committed-vault-api';

type TokenizedValue = components['schemas']['TokenizedValue'];
type Answer = operations['tokenize']['responses'][201]['content']['application/json'];

export const answer: Answer = {
  email: '0b6c2a57-4a7e-4e0e-9d4b-1c7f6a4a3c11',
  profile: { phones: ['9a1f7a0e-2b7c-4c41-9a55-2d8a4b9c6f10'], address: { line1: 'a4f1c5d2' } },
  list: [{ nested: 'c1f3' }, 'd2e4'],
};
export const committed: Committed['schemas']['TokenizedValue'] = { a: ['b', { c: 'd' }] };

// @ts-expect-error a number is no tokenized value
export const wrongLeaf: TokenizedValue = 42;
// @ts-expect-error nor an object with one
export const wrongMember: TokenizedValue = { email: 42 };
// @ts-expect-error nor an array with one
export const wrongItem: TokenizedValue = ['a', true];
// @ts-expect-error nor an answer
export const wrongAnswer: Answer = 42;
// @ts-expect-error nor in the committed client
export const wrongCommitted: Committed['schemas']['TokenizedValue'] = { email: 42 };
`;

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

  it("a client generated with openapi-typescript's default options compiles a tokenize, a search with only `query` and a transaction", () => {
    // Inside the repository (test-output/ is ignored) so that `openapi-fetch` resolves from node_modules.
    mkdirSync(join(ROOT, 'test-output'), { recursive: true });
    const dir = mkdtempSync(join(ROOT, 'test-output', 'default-client-'));
    try {
      // As a user would run it in a project of their own: no option but the output, no redocly.yaml.
      execFileSync(
        process.execPath,
        [
          join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
          join(ROOT, 'openapi.json'),
          '-o',
          'vault-api.d.ts',
        ],
        { cwd: dir, stdio: 'pipe' },
      );
      writeFileSync(join(dir, 'program.ts'), DEFAULT_CLIENT_PROGRAM);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'commonjs',
            moduleResolution: 'node',
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            types: [],
          },
          files: ['program.ts'],
        }),
      );
      const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
        cwd: dir,
        encoding: 'utf8',
      });
      expect(tsc.stdout + tsc.stderr).toBe('');
      expect(tsc.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the generated types compile under tsc --strict without skipLibCheck, and TokenizedValue is not `any`', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vault-strict-client-'));
    try {
      execFileSync(
        process.execPath,
        [
          join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
          join(ROOT, 'openapi.json'),
          '-o',
          'vault-api.d.ts',
        ],
        { cwd: dir, stdio: 'pipe' },
      );
      writeFileSync(
        join(dir, 'committed-vault-api.d.ts'),
        readFileSync(join(ROOT, 'test/generated/vault-api.d.ts'), 'utf8'),
      );
      writeFileSync(join(dir, 'program.ts'), TOKENIZED_VALUE_PROGRAM);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'commonjs',
            moduleResolution: 'node',
            strict: true,
            noEmit: true,
            skipLibCheck: false,
            types: [],
          },
          files: ['program.ts', 'vault-api.d.ts', 'committed-vault-api.d.ts'],
        }),
      );
      const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
        cwd: dir,
        encoding: 'utf8',
      });
      expect(tsc.stdout + tsc.stderr).toBe('');
      expect(tsc.status).toBe(0);
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
    // Verified in the background: polled until it is no longer pending, however loaded the machine.
    let status: string = connection.data!.status;
    await waitFor(
      async () => {
        const got = await api.GET('/orchestration/connections/{id}', {
          params: { path: { id: connectionId } },
        });
        status = got.data!.status;
        return status !== 'pending';
      },
      { intervalMs: 100, what: 'the connection verified' },
    ).catch(ignoreTimeout);
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
