import { randomInt } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { newApplication, newTenant, startApp, type TestApp, type TestTenant } from './app';

/** A random card number with a valid Luhn check digit (so that every test works on a card of its own). */
export function luhnCard(prefix = '4', length = 16): string {
  let digits = prefix;
  while (digits.length < length - 1) digits += String(randomInt(10));
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits + String((10 - (sum % 10)) % 10);
}

/** Whether `digits` pass the Luhn check. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/**
 * `count` distinct Luhn-valid 16-digit numbers sharing the first 6 and last 4 digits of `number`, not it:
 * the candidates an attacker holding a masked read would try.
 */
export function sameGroup(number: string, count: number): string[] {
  const out = new Set<string>();
  while (out.size < count) {
    const guess = number.slice(0, 6) + String(randomInt(1_000_000)).padStart(6, '0') + number.slice(-4);
    if (guess !== number && luhnValid(guess)) out.add(guess);
  }
  return [...out];
}

export const cardData = (number: string, extra: Record<string, unknown> = {}) => ({
  number,
  expiration_month: 12,
  expiration_year: 2031,
  ...extra,
});

/** Tokenizes one element with `key`; returns the response (not checked). */
export const tokenize = (t: TestApp, key: string, body: unknown) =>
  request(t.http)
    .post('/tokenize')
    .set('BT-API-KEY', key)
    .send(body as object);

/** The most tokens a public key or a session may create in one request (section "Limits of public keys"). */
export const PUBLIC_BATCH = 10;

/**
 * Tokenizes `bodies` as a public key or a session must, at most PUBLIC_BATCH a request, each answered 201;
 * returns the tokens answered, in order.
 */
export async function tokenizeInBatches(t: TestApp, key: string, bodies: unknown[]): Promise<unknown[]> {
  const answered: unknown[] = [];
  for (let i = 0; i < bodies.length; i += PUBLIC_BATCH)
    answered.push(
      ...((await tokenize(t, key, bodies.slice(i, i + PUBLIC_BATCH)).expect(201)).body as unknown[]),
    );
  return answered;
}

export const patchToken = (t: TestApp, key: string, id: string, body: Record<string, unknown>) =>
  request(t.http)
    .patch(`/tokens/${id}`)
    .set('BT-API-KEY', key)
    .set('Content-Type', 'application/merge-patch+json')
    .send(JSON.stringify(body));

/** A session created with `publicKey` and authorized by `privateKey` with `grants`. */
export async function authorizedSession(
  t: TestApp,
  publicKey: string,
  privateKey: string,
  grants: { permissions?: string[]; rules?: unknown[] },
): Promise<string> {
  const created = await request(t.http).post('/sessions').set('BT-API-KEY', publicKey).expect(201);
  await request(t.http)
    .post('/sessions/authorize')
    .set('BT-API-KEY', privateKey)
    .send({ nonce: created.body.nonce, ...grants })
    .expect(204);
  return created.body.session_key as string;
}

/**
 * Measures how long the event loop of this process (which also runs the server under test) was held,
 * and how much the heap grew, while `work` ran.
 */
export async function measureLoop<T>(
  work: () => Promise<T>,
): Promise<{ result: T; maxBlockMs: number; heapGrowthMb: number; elapsedMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  const heapBefore = process.memoryUsage().heapUsed;
  let heapPeak = heapBefore;
  const sampler = setInterval(() => {
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  }, 5);
  histogram.enable();
  const started = performance.now();
  try {
    const result = await work();
    const elapsedMs = performance.now() - started;
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    return {
      result,
      // The histogram counts the delay past the resolution: what the loop was held beyond its 5 ms tick.
      maxBlockMs: histogram.max / 1e6,
      heapGrowthMb: (heapPeak - heapBefore) / 2 ** 20,
      elapsedMs,
    };
  } finally {
    histogram.disable();
    clearInterval(sampler);
  }
}

export interface AppSpec {
  type: 'public' | 'private' | 'management';
  permissions?: string[];
  rules?: unknown[];
}

export interface Scene<K extends string> {
  t: TestApp;
  db: DataSource;
  tenant: TestTenant;
  keys: Record<K, string>;
  ids: Record<K, string>;
}

/** A server (rate limit out of the way), a tenant of its own, and the named applications with their keys. */
export async function scene<K extends string>(
  tenantName: string,
  apps: Record<K, AppSpec>,
): Promise<Scene<K>> {
  const t = await startApp({ RATE_LIMIT_PER_MINUTE: '100000' });
  const tenant = await newTenant(t, tenantName);
  const keys = {} as Record<K, string>;
  const ids = {} as Record<K, string>;
  for (const [name, spec] of Object.entries(apps) as [K, AppSpec][]) {
    const app = await newApplication(t, tenant.managementKey, spec);
    keys[name] = app.key;
    ids[name] = app.id;
  }
  return { t, db: t.app.get(DataSource), tenant, keys, ids };
}
