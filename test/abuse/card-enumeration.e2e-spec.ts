import { randomInt, randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { RetentionJob } from '../../src/common/jobs/retention.job';
import { newApplication, newTenant, startApp, TestApp, TestTenant } from '../support/app';
import {
  authorizedSession,
  cardData,
  patchToken,
  PUBLIC_BATCH,
  tokenize,
  tokenizeInBatches,
  luhnValid,
} from '../support/attacker';

/**
 * The Luhn-valid 16-digit numbers that begin with `bin` and end with `last4`, in order of their middle
 * digits: what an attacker who saw a masked read has left to try. At most `max` of them.
 */
function candidates(bin: string, last4: string, max: number): string[] {
  const unknown = 16 - bin.length - 4;
  const out: string[] = [];
  for (let middle = 0; middle < 10 ** unknown && out.length < max; middle++) {
    const number = bin + String(middle).padStart(unknown, '0') + last4;
    if (luhnValid(number)) out.push(number);
  }
  return out;
}

/** A fresh group (first 6 and last 4 digits of a Visa number), so that every test counts on its own. */
const freshGroup = (): { bin6: string; last4: string } => ({
  bin6: `4${String(randomInt(100_000)).padStart(5, '0')}`,
  last4: String(randomInt(10_000)).padStart(4, '0'),
});

/** `count` distinct Luhn-valid numbers of one group, drawn from random middles. */
function groupNumbers(group: { bin6: string; last4: string }, count: number): string[] {
  const out = new Set<string>();
  while (out.size < count) {
    const number = group.bin6 + String(randomInt(1_000_000)).padStart(6, '0') + group.last4;
    if (luhnValid(number)) out.add(number);
  }
  return [...out];
}

const card = (number: string, extra: Record<string, unknown> = {}) => ({
  type: 'card',
  data: cardData(number),
  ...extra,
});

/**
 * Abuse class: card-number oracle. A masked read shows a card's BIN, last four and fingerprint; with an
 * 8-digit BIN only 4 digits are unknown (1,000 Luhn-valid candidates), and the public key every browser
 * holds answered each tokenize with the new token's fingerprint, 100 cards a request: the card came back
 * in a few requests. Now fingerprints go only to callers that may read the token, BINs show 6 digits,
 * and callers that do get fingerprints may tokenize at most CARD_ENUMERATION_LIMIT (10) distinct numbers
 * sharing the first 6 and last 4 digits per tenant and 24 hours (429 `card_enumeration_suspected`).
 */
describe('abuse: card-number oracle', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let merchant: string;
  let pub: string;
  let pubId: string;
  let reader: string;
  let masked: string;
  let updater: string;

  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT_PER_MINUTE: '100000', METRICS_ENABLED: 'true' });
    db = t.app.get(DataSource);
    tenant = await newTenant(t, 'enumeration');
    const app = (spec: Parameters<typeof newApplication>[2]) => newApplication(t, tenant.managementKey, spec);
    // The merchant's backend: tokenizes and reads every card.
    merchant = (await app({ type: 'private', permissions: ['token:create', 'token:read', 'token:search'] }))
      .key;
    const p = await app({ type: 'public', permissions: ['token:create'] });
    pub = p.key;
    pubId = p.id;
    // A key that reads (and so gets fingerprints) only in its own container.
    reader = (
      await app({
        type: 'private',
        rules: [{ priority: 1, container: '/attacker/', permissions: ['token:create', 'token:read'] }],
      })
    ).key;
    // A key with masked read of the victim's cards (a support tool, a reporting job).
    masked = (await app({ type: 'private', permissions: ['token:read'] })).key;
    updater = (await app({ type: 'private', permissions: ['token:update'] })).key;
  });
  afterAll(() => t.close());

  const tokenCount = async (tenantId = tenant.tenantId): Promise<number> =>
    (await db.query('SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1', [tenantId]))[0].n;
  const refusals = async (): Promise<{ operation: string; message: string; entity_type: string }[]> =>
    db.query(
      `SELECT operation, message, entity_type FROM audit_logs WHERE tenant_id = $1 AND operation = 'refuse'`,
      [tenant.tenantId],
    );
  const metric = async (): Promise<number> => {
    const text = (await request(t.http).get('/metrics').expect(200)).text;
    const line = text.split('\n').find((l) => l.startsWith('vault_card_enumeration_refusals_total'));
    return line ? Number(line.split(' ').pop()) : 0;
  };

  /** The victim's card, tokenized by the merchant; and what a masked read shows of it. */
  async function victim(number: string) {
    const created = await tokenize(t, merchant, card(number)).expect(201);
    const read = await request(t.http)
      .get(`/tokens/${created.body.id}`)
      .set('BT-API-KEY', masked)
      .expect(200);
    return {
      id: created.body.id as string,
      bin: read.body.enrichments.card_details.bin as string,
      last4: read.body.enrichments.card_details.last4 as string,
      fingerprint: read.body.fingerprint as string,
    };
  }

  it('the public key, 10 candidates a request (its most), recovers nothing: its answers carry no fingerprint', async () => {
    const number = groupNumbers(freshGroup(), 1)[0];
    const seen = await victim(number);
    expect(seen.fingerprint).toEqual(expect.any(String));
    // The attacker tries the candidates a masked read leaves (the full set of 1,000 with an 8-digit BIN);
    // the right number is among them even when the BIN leaves far more, so the test shows it never matches.
    const tries = candidates(seen.bin, seen.last4, 999);
    tries.splice(randomInt(tries.length), 0, number);
    let requests = 0;
    let recovered: string | undefined;
    let fingerprintsSeen = 0;
    for (let i = 0; i < tries.length && !recovered; i += PUBLIC_BATCH) {
      const batch = tries.slice(i, i + PUBLIC_BATCH);
      const res = await tokenize(
        t,
        pub,
        batch.map((n) => card(n)),
      ).expect(201);
      requests++;
      (res.body as { fingerprint?: string }[]).forEach((token, j) => {
        if (token.fingerprint !== undefined) fingerprintsSeen++;
        if (token.fingerprint === seen.fingerprint) recovered = batch[j];
      });
    }
    // Before: recovered in `requests` requests (logged for the record).
    if (recovered) console.log(`card recovered with the public key in ${requests} requests`);
    expect(fingerprintsSeen).toBe(0);
    expect(recovered).toBeUndefined();
  });

  it('no fingerprint in a public key create answer, nor to a session or key without token:read on the new token', async () => {
    const [a, b] = groupNumbers(freshGroup(), 2);
    const one = await request(t.http).post('/tokens').set('BT-API-KEY', pub).send(card(a)).expect(201);
    expect(one.body.fingerprint).toBeUndefined();
    expect(one.body.enrichments.card_details.bin).toHaveLength(6);
    const nested = await tokenize(t, pub, { c: card(b), s: 'plain value' }).expect(201);
    expect(nested.body.c.fingerprint).toBeUndefined();
    // A session may create in /attacker/ but read nowhere.
    const session = await authorizedSession(t, pub, merchant, {
      rules: [{ priority: 1, container: '/attacker/', permissions: ['token:create'] }],
    });
    const bySession = await tokenize(t, session, card(b, { containers: ['/attacker/'] })).expect(201);
    expect(bySession.body.fingerprint).toBeUndefined();
    // The reader gets fingerprints in its own container only, where it may read.
    const own = await tokenize(t, reader, card(a, { containers: ['/attacker/'] })).expect(201);
    expect(own.body.fingerprint).toEqual(expect.any(String));
    // A PATCH answer to a key without token:read carries none either.
    const patched = await patchToken(t, updater, one.body.id, { metadata: { k: 'v' } }).expect(200);
    expect(patched.body.fingerprint).toBeUndefined();
    const patchedByReader = await patchToken(t, merchant, one.body.id, { metadata: { k: 'w' } });
    // (the merchant has no token:update: a 403, which says nothing of the token either)
    expect(patchedByReader.body.fingerprint).toBeUndefined();
    // A deduplicated answer to a public key is a new token, without fingerprint.
    const dedup = await tokenize(t, pub, card(a, { deduplicate_token: true })).expect(201);
    expect(dedup.body.fingerprint).toBeUndefined();
  });

  it('the reading key is refused (429 card_enumeration_suspected) past 10 numbers of a BIN and last four: nothing written, one refuse audit row, the metric', async () => {
    const number = groupNumbers(freshGroup(), 1)[0];
    const seen = await victim(number);
    expect(seen.bin).toHaveLength(6);
    const tries = candidates(seen.bin, seen.last4, 5_000).filter((n) => n !== number);
    const tokensBefore = await tokenCount();
    const metricBefore = await metric();
    const auditBefore = (await refusals()).length;

    // 100 candidates in one request: refused as a whole, nothing written.
    const res = await tokenize(
      t,
      reader,
      tries.slice(0, 100).map((n) => card(n, { containers: ['/attacker/'] })),
    );
    expect(res.status).toBe(429);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('card_enumeration_suspected');
    expect(JSON.stringify(res.body)).not.toContain(seen.bin + '0');
    expect(JSON.stringify(res.body)).not.toContain(tries[0]);
    expect(await tokenCount()).toBe(tokensBefore);
    const rows = await refusals();
    expect(rows).toHaveLength(auditBefore + 1);
    expect(rows.at(-1)).toMatchObject({ operation: 'refuse', entity_type: 'token' });
    expect(rows.at(-1)!.message).not.toContain(seen.last4);
    expect(await metric()).toBe(metricBefore + 1);

    // One at a time: the victim's own number counted when the merchant (which gets fingerprints too)
    // tokenized it, so 9 more pass; then every further number is refused, the victim's included.
    let requests = 0;
    let passed = 0;
    let recovered: string | undefined;
    for (const n of [...tries.slice(100, 115), number]) {
      const one = await tokenize(t, reader, card(n, { containers: ['/attacker/'] }));
      requests++;
      if (one.status === 201) {
        passed++;
        if (one.body.fingerprint === seen.fingerprint) recovered = n;
      } else {
        expect(one.status).toBe(429);
        expect(one.body.code).toBe('card_enumeration_suspected');
      }
    }
    expect(passed).toBe(9);
    expect(recovered).toBeUndefined();
    expect(await tokenCount()).toBe(tokensBefore + 9);
    expect(await metric()).toBe(metricBefore + 1 + (requests - 9));
    expect(await refusals()).toHaveLength(auditBefore + 1 + (requests - 9));
  });

  it('the same attack through a token-type token whose fingerprint expression is the bare number is counted too', async () => {
    const numbers = groupNumbers(freshGroup(), 11);
    const res = await tokenize(
      t,
      reader,
      numbers.map((n) => ({
        type: 'token',
        data: n,
        fingerprint_expression: '{{ data }}',
        containers: ['/attacker/'],
      })),
    );
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('card_enumeration_suspected');
  });

  it('a key that may search (not read) its new tokens is counted too: searching fingerprint: would tell the candidate', async () => {
    const seeker = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        rules: [{ priority: 1, container: '/seeker/', permissions: ['token:create', 'token:search'] }],
      })
    ).key;
    const numbers = groupNumbers(freshGroup(), 11);
    const before = await tokenCount();
    const res = await tokenize(
      t,
      seeker,
      numbers.map((n, i) => card(n, { containers: ['/seeker/'], metadata: { candidate: String(i) } })),
    );
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('card_enumeration_suspected');
    expect(await tokenCount()).toBe(before);
    const ten = await tokenize(
      t,
      seeker,
      numbers.slice(0, 10).map((n) => card(n, { containers: ['/seeker/'] })),
    ).expect(201);
    expect(ten.body[0]).not.toHaveProperty('fingerprint');
  });

  it('numbers already stored do not count again; the limit is per tenant', async () => {
    const group = freshGroup();
    const numbers = groupNumbers(group, 11);
    for (const n of numbers.slice(0, 10))
      await tokenize(t, reader, card(n, { containers: ['/attacker/'] })).expect(201);
    // The same ten again (one request): already stored, nothing counts.
    await tokenize(
      t,
      reader,
      numbers.slice(0, 10).map((n) => card(n, { containers: ['/attacker/'] })),
    ).expect(201);
    await tokenize(t, reader, card(numbers[3], { containers: ['/attacker/'] })).expect(201);
    // An eleventh is refused.
    const eleventh = await tokenize(t, reader, card(numbers[10], { containers: ['/attacker/'] }));
    expect(eleventh.status).toBe(429);
    // Keys without token:read are never counted (and never get fingerprints).
    const byPublic = (await tokenizeInBatches(
      t,
      pub,
      groupNumbers(group, 30).map((n) => card(n)),
    )) as { fingerprint?: string }[];
    expect(byPublic.filter((token) => token.fingerprint !== undefined)).toEqual([]);

    // Another tenant counts on its own: the same eleven numbers pass there up to its own limit.
    const other = await newTenant(t, 'enumeration other');
    const otherReader = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
    ).key;
    await tokenize(
      t,
      otherReader,
      numbers.slice(0, 10).map((n) => card(n)),
    ).expect(201);
    expect(await tokenCount(other.tenantId)).toBe(10);
  });

  it('numbers stored in tokens the caller may read (by its rules) are spared; those stored where it may not read count', async () => {
    const numbers = groupNumbers(freshGroup(), 10);
    // The merchant (flat token:read) stores all ten: five where the reader's rule reaches, five elsewhere.
    await tokenize(
      t,
      merchant,
      numbers.map((n, i) => card(n, { containers: [i < 5 ? '/attacker/' : '/merchant/'] })),
    ).expect(201);
    // The five it may read tell it nothing new: spared, though the group already holds ten counted numbers.
    await tokenize(
      t,
      reader,
      numbers.slice(0, 5).map((n) => card(n, { containers: ['/attacker/'] })),
    ).expect(201);
    // One it may not read counts: the eleventh of the group.
    const hidden = await tokenize(t, reader, card(numbers[7], { containers: ['/attacker/'] }));
    expect(hidden.status).toBe(429);
    expect(hidden.body.code).toBe('card_enumeration_suspected');
  });

  it('a refused request with an idempotency key stores no response: the key is released, a retry is refused again', async () => {
    const numbers = groupNumbers(freshGroup(), 11);
    const body = numbers.map((n) => card(n, { containers: ['/attacker/'] }));
    const send = () =>
      request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', reader)
        .set('BT-IDEMPOTENCY-KEY', `enumeration-${numbers[0].slice(-8)}`)
        .send(body);
    const before = await tokenCount();
    const first = await send();
    expect(first.status).toBe(429);
    expect(first.body.code).toBe('card_enumeration_suspected');
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM idempotency_records WHERE tenant_id = $1 AND response_status IS NOT NULL`,
      [tenant.tenantId],
    );
    expect(n).toBe(0);
    const again = await send();
    expect(again.status).toBe(429);
    expect(again.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(await tokenCount()).toBe(before);
  });

  it('20 concurrent requests of distinct numbers at limit 10: exactly 10 succeed', async () => {
    const numbers = groupNumbers(freshGroup(), 20);
    const before = await tokenCount();
    const answers = await Promise.all(
      numbers.map((n) => tokenize(t, reader, card(n, { containers: ['/attacker/'] }))),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    expect(await tokenCount()).toBe(before + 10);
  });

  it('bin is 6 digits in masked reads, search results and webhook events', async () => {
    const webhookId = randomUUID();
    await db.query(
      `INSERT INTO webhooks (tenant_id, id, name, url, events, status, secret, created_at)
       VALUES ($1, $2, 'test hook', 'https://receiver.example/hook', ARRAY['token:created']::text[], 'enabled', '\\x00'::bytea, now())`,
      [tenant.tenantId, webhookId],
    );
    const created = await tokenize(
      t,
      merchant,
      card('4242424242424242', { metadata: { tag: 'bin6' } }),
    ).expect(201);
    expect(created.body.enrichments.card_details).toEqual({ bin: '424242', last4: '4242', brand: 'visa' });
    const read = await request(t.http)
      .get(`/tokens/${created.body.id}`)
      .set('BT-API-KEY', masked)
      .expect(200);
    expect(read.body.enrichments.card_details.bin).toBe('424242');
    const found = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', merchant)
      .send({ query: `id:${created.body.id}` })
      .expect(200);
    expect(found.body.data[0].enrichments.card_details.bin).toBe('424242');
    const v2 = await request(t.http)
      .post('/v2/tokens/search')
      .set('BT-API-KEY', merchant)
      .send({ query: `id:${created.body.id}` })
      .expect(200);
    expect(v2.body.data[0].enrichments.card_details.bin).toBe('424242');
    expect(v2.body.data[0].fingerprint).toEqual(expect.any(String));
    // A key that may search but not read gets the tokens without their fingerprint.
    const searcher = (
      await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:search'] })
    ).key;
    const searched = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', searcher)
      .send({ query: `id:${created.body.id}` })
      .expect(200);
    expect(searched.body.data[0].enrichments.card_details.bin).toBe('424242');
    expect(searched.body.data[0]).not.toHaveProperty('fingerprint');
    const [event]: { data: { enrichments: { card_details: { bin: string } } } }[] = await db.query(
      `SELECT data FROM webhook_events WHERE tenant_id = $1 AND entity_id = $2 AND type = 'token:created'`,
      [tenant.tenantId, created.body.id],
    );
    expect(event.data.enrichments.card_details.bin).toBe('424242');
    expect(pubId).toEqual(expect.any(String));
  });

  it('the counting state holds digests only, and the retention job deletes it after 24 hours', async () => {
    const [number] = groupNumbers(freshGroup(), 1);
    await tokenize(t, reader, card(number, { containers: ['/attacker/'] })).expect(201);
    const rows: Record<string, unknown>[] = await db.query(
      `SELECT * FROM card_enumeration_counts WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    expect(rows.length).toBeGreaterThan(0);
    const dump = JSON.stringify(
      rows.map((r) => Object.values(r).map((v) => (Buffer.isBuffer(v) ? v.toString('hex') : v))),
    );
    expect(dump).not.toContain(number);
    expect(dump).not.toContain(number.slice(0, 6) + number.slice(-4));
    await db.query(
      `UPDATE card_enumeration_counts SET created_at = now() - interval '25 hours' WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    await t.app.get(RetentionJob).runNow('card-enumeration-counts');
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM card_enumeration_counts WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    expect(n).toBe(0);
  });
});
