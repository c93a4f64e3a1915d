import 'reflect-metadata';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import request from 'supertest';
import { createApp } from '../../src/app.setup';
import { loadConfig } from '../../src/config/load-config';
import type { Principal } from '../../src/common/auth/principal';
import { TenantsService } from '../../src/modules/tenants/tenants.service';
import { createDatabase, dropDatabase } from './test-database';

export interface TestApp {
  app: NestExpressApplication;
  http: Server;
  /** Every log line the server wrote, for assertions on trace ids and on secrets. */
  logs: string[];
  /**
   * The tenants newTenant made through this app: a settlement pass a test runs by hand covers these only
   * (`settleOwn`), not the operations of other files' tenants in the shared database.
   */
  tenants: string[];
  close(): Promise<void>;
}

/**
 * Boots the real AppModule through the same createApp/configureApp as main.ts, on the run's PostgreSQL
 * database unless the overrides say otherwise (DATABASE_URL: '' selects embedded PGlite).
 */
export async function startApp(env: Record<string, string | undefined> = {}): Promise<TestApp> {
  const logs: string[] = [];
  // Test files share the run's database: a webhook delivery worker in every app would claim other files'
  // deliveries (and fail them, their receivers being elsewhere). Tests of delivery turn it on.
  // Every test request comes from 127.0.0.1, so tests that try many bad keys (the access matrix) would
  // meet the limit of failed authentications per address, and tests that tokenize often with a public key
  // (the fuzzer) the limit of public tokenizes per address: the tests of those limits set them themselves.
  const config = loadConfig({
    ...process.env,
    BOOTSTRAP: 'false',
    LOG_LEVEL: 'info',
    WEBHOOK_DELIVERY_ENABLED: 'false',
    AUTH_FAILURES_PER_MINUTE: '1000000',
    PUBLIC_TOKENIZE_PER_MINUTE: '1000000',
    ...env,
  });
  const app = await createApp(config, { logStream: { write: (line: string) => void logs.push(line) } });
  await app.init();
  // Nest's own log lines wait in its buffer until listen(); flushed here so that tests see them too.
  app.flushLogs();
  return { app, http: app.getHttpServer(), logs, tenants: [], close: () => app.close() };
}

/**
 * An app on a database of its own, made here (migrated as the app starts) and dropped by `close()`: for a
 * file that runs a job by hand with the app's clock moved on (a retention purge an hour or two days ahead),
 * which on the shared database would delete other files' rows (their CVCs, sessions, idempotency records).
 * `databaseUrl` starts a second instance on it.
 */
export async function startAppAlone(
  prefix: string,
  env: Record<string, string | undefined> = {},
): Promise<TestApp & { databaseUrl: string }> {
  const database = await createDatabase(`vault_test_${prefix}`);
  let t: TestApp;
  try {
    t = await startApp({ ...env, DATABASE_URL: database.url });
  } catch (error) {
    await dropDatabase(database.name);
    throw error;
  }
  const close = async () => {
    try {
      await t.close();
    } finally {
      await dropDatabase(database.name);
    }
  };
  return { ...t, databaseUrl: database.url, close };
}

export interface TestTenant {
  tenantId: string;
  managementApplicationId: string;
  managementKey: string;
}

/** A fresh tenant with its management key, so that tests never see each other's data. */
export async function newTenant(t: TestApp, name = 'test tenant'): Promise<TestTenant> {
  const created = await t.app.get(TenantsService).createTenant(name);
  t.tenants.push(created.tenant_id);
  return {
    tenantId: created.tenant_id,
    managementApplicationId: created.management_application_id,
    managementKey: created.management_key,
  };
}

export interface TestApplication {
  id: string;
  key: string;
  body: Record<string, unknown>;
}

export async function newApplication(
  t: TestApp,
  managementKey: string,
  body: { name?: string; type: string; permissions?: string[]; rules?: unknown[] },
): Promise<TestApplication> {
  const res = await request(t.http)
    .post('/applications')
    .set('BT-API-KEY', managementKey)
    .send({ name: `${body.type} app`, ...body })
    .expect(201);
  return { id: res.body.id, key: res.body.key, body: res.body };
}

export function expectProblem(res: request.Response, status: number): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: 'about:blank', status });
  expect(typeof res.body.title).toBe('string');
  expect(typeof res.body.detail).toBe('string');
}

/**
 * A new tenant with a private application that creates and reads tokens, and one card tokenized with it
 * (`number`, else 4242...): the start of every test that then reads a card back through some change.
 */
export async function tenantWithCard(
  t: TestApp,
  name: string,
  number = '4242424242424242',
): Promise<{ tenant: TestTenant; key: string; tokenId: string }> {
  const tenant = await newTenant(t, name);
  const { key } = await newApplication(t, tenant.managementKey, {
    type: 'private',
    permissions: ['token:create', 'token:read'],
  });
  const made = await request(t.http)
    .post('/tokens')
    .set('BT-API-KEY', key)
    .send({ type: 'card', data: { number, expiration_month: 12, expiration_year: 2031 } })
    .expect(201);
  return { tenant, key, tokenId: made.body.id };
}

/** A private-application principal, for calling services directly (as a handler would). */
export function privatePrincipal(tenantId: string, permissions: string[] = ['token:use']): Principal {
  return {
    tenantId,
    applicationId: tenantId,
    applicationType: 'private',
    keyKind: 'private',
    keyId: 'test',
    authorized: true,
    permissions,
    rules: [],
  };
}
