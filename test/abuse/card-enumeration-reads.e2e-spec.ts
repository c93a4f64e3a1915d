import request from 'supertest';
import { DataSource } from 'typeorm';
import { newApplication, newTenant, startApp, TestApp, TestTenant } from '../support/app';
import { cardData, luhnCard, tokenize, tokenizeInBatches, sameGroup } from '../support/attacker';
import { newConnection, ORCHESTRATION_PERMISSIONS } from '../support/orchestration';

const LIMIT = 10;

/** A Luhn-valid Visa number of a fresh group (first 6 and last 4 digits), so every test counts on its own. */
const victimNumber = (): string => luhnCard('4', 16);

const card = (number: string, extra: Record<string, unknown> = {}) => ({
  type: 'card',
  data: cardData(number),
  ...extra,
});

interface Seen {
  id: string;
  fingerprint?: string;
}

/**
 * Abuse class: card-number oracle through reads of tokens the public key made. The public key gets no
 * fingerprint and is never counted by the card enumeration guard; a private key whose only rule grants
 * `token:read` on its own container had the public key tokenize 100 Luhn-valid candidates of a victim's
 * group (first 6 and last 4 digits, from a masked read) into that container, then read each one (a
 * GET, a list, a search, or a transaction's payment method) and compared the fingerprint with the
 * victim's: the card came back in about 101 requests. Now a card number's fingerprint is shown on read
 * only once it has been counted under the guard: a token made by an uncounted caller is counted at its
 * first read that would show it, under the same limit (10 per group, tenant and 24 hours); past it the
 * read answers without the fingerprint.
 */
describe('abuse: card-number oracle through reads of tokens the public key made', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let merchant: string;
  let pub: string;
  let masked: string;
  let narrow: string;
  let connection: string;

  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT_PER_MINUTE: '100000', METRICS_ENABLED: 'true' });
    db = t.app.get(DataSource);
    tenant = await newTenant(t, 'enumeration-reads');
    const app = async (spec: Parameters<typeof newApplication>[2]) =>
      (await newApplication(t, tenant.managementKey, spec)).key;
    merchant = await app({
      type: 'private',
      permissions: [
        'token:create',
        'token:read',
        'token:search',
        'token:use',
        'orchestration:transactions:read',
      ],
    });
    pub = await app({ type: 'public', permissions: ['token:create'] });
    masked = await app({ type: 'private', permissions: ['token:read'] });
    // The attacker: reads, searches, uses and creates only in its own container; reads its transactions.
    narrow = await app({
      type: 'private',
      permissions: ['orchestration:transactions:read'],
      rules: [
        {
          priority: 1,
          container: '/attacker/',
          permissions: ['token:create', 'token:read', 'token:search', 'token:use'],
        },
      ],
    });
    const manager = await app({ type: 'private', permissions: ORCHESTRATION_PERMISSIONS });
    connection = (await newConnection(t, manager, { currencies: ['USD'], countries: ['US'] })).id;
  });
  afterAll(() => t.close());

  const refusals = async (): Promise<number> =>
    (
      await db.query(
        `SELECT count(*)::int AS n FROM audit_logs WHERE tenant_id = $1 AND operation = 'refuse'`,
        [tenant.tenantId],
      )
    )[0].n;
  const counted = async (): Promise<number> =>
    (
      await db.query(`SELECT count(*)::int AS n FROM card_enumeration_counts WHERE tenant_id = $1`, [
        tenant.tenantId,
      ])
    )[0].n;
  const metric = async (): Promise<number> => {
    const text = (await request(t.http).get('/metrics').expect(200)).text;
    const line = text.split('\n').find((l) => l.startsWith('vault_card_enumeration_refusals_total'));
    return line ? Number(line.split(' ').pop()) : 0;
  };
  const get = (key: string, id: string) =>
    request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', key).expect(200);

  /** The victim's card, tokenized by the merchant; what a masked read by another key shows of it. */
  async function victim(number: string): Promise<{ id: string; fingerprint: string }> {
    const created = await tokenize(t, merchant, card(number)).expect(201);
    const read = await get(masked, created.body.id);
    expect(read.body.fingerprint).toEqual(expect.any(String));
    return { id: created.body.id, fingerprint: read.body.fingerprint };
  }

  /**
   * The candidates, the victim's own number last (the attacker's worst case), tokenized by the public key.
   * The victim's is tokenized first, on its own, so that it is also last in the lists (newest first):
   * tokens made by one request share their creation time and are listed in the order of their random
   * ids, which would put it among the first 9 counted in about 1 run in 11.
   */
  async function plant(number: string): Promise<{ tries: string[]; ids: string[] }> {
    const tries = [...sameGroup(number, 99), number];
    const own = await tokenize(t, pub, [card(number, { containers: ['/attacker/'] })]).expect(201);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const planted = await tokenizeInBatches(
      t,
      pub,
      tries.slice(0, -1).map((n) => card(n, { containers: ['/attacker/'] })),
    );
    const answered = [...(planted as Seen[]), ...(own.body as Seen[])];
    const ids = answered.map((token) => token.id);
    expect(answered.filter((token) => token.fingerprint !== undefined)).toEqual([]);
    return { tries, ids };
  }

  /** What the attacker learns from the tokens it saw: fingerprints, and whether one is the victim's. */
  function tally(seen: Seen[], ids: string[], tries: string[], victimFingerprint: string) {
    const byId = new Map(seen.map((token) => [token.id, token.fingerprint]));
    const fingerprints = new Set<string>();
    let recovered: string | undefined;
    ids.forEach((id, i) => {
      const fingerprint = byId.get(id);
      if (fingerprint === undefined) return;
      fingerprints.add(fingerprint);
      if (fingerprint === victimFingerprint) recovered = tries[i];
    });
    return { fingerprintsSeen: fingerprints.size, recovered };
  }

  it('GET /tokens/{id} of 100 candidates: at most the limit of fingerprints, the card is not recovered', async () => {
    const number = victimNumber();
    const seen = await victim(number);
    const { tries, ids } = await plant(number);
    const [refusedBefore, metricBefore] = [await refusals(), await metric()];
    let requests = 1;
    const answers: Seen[] = [];
    for (const id of ids) {
      const res = await get(narrow, id);
      requests++;
      // The read itself succeeds, masked as usual.
      expect(res.body.mask).toEqual(expect.anything());
      answers.push(res.body);
      if (res.body.fingerprint === seen.fingerprint) break;
    }
    const { fingerprintsSeen, recovered } = tally(answers, ids, tries, seen.fingerprint);
    // The measure, for the record: before, recovered in 101 requests with 100 fingerprints seen.
    console.log(
      `GET: ${requests} requests, ${fingerprintsSeen} fingerprints seen, card ${recovered ? 'recovered' : 'not recovered'}`,
    );
    // The victim's own token, counted when the merchant made it, takes one of the group's 10.
    expect(fingerprintsSeen).toBeLessThanOrEqual(LIMIT - 1);
    expect(recovered).toBeUndefined();
    // One refuse audit row per read that withheld a fingerprint, and the metric.
    expect((await refusals()) - refusedBefore).toBe(100 - fingerprintsSeen);
    expect((await metric()) - metricBefore).toBe(100 - fingerprintsSeen);
    // A token shown once shows its fingerprint again without counting again; a withheld one stays withheld.
    const rows = await counted();
    const shown = answers.find((a) => a.fingerprint !== undefined)!;
    expect((await get(narrow, shown.id)).body.fingerprint).toBe(shown.fingerprint);
    expect((await get(narrow, ids[99])).body).not.toHaveProperty('fingerprint');
    expect(await counted()).toBe(rows);
  });

  it('lists and searches (v1 and v2) of 100 candidates: at most the limit of fingerprints, no fingerprint filter match', async () => {
    const number = victimNumber();
    const seen = await victim(number);
    const { tries, ids } = await plant(number);
    const answers: Seen[] = [];
    const started = performance.now();
    const list = await request(t.http)
      .get('/tokens')
      .query({ container: '/attacker/', size: 100 })
      .set('BT-API-KEY', narrow)
      .expect(200);
    const firstMs = performance.now() - started;
    answers.push(...(list.body.data as Seen[]));
    // The same page again, and a page of 100 tokens a counted caller made: what a read costs then.
    const again = performance.now();
    await request(t.http)
      .get('/tokens')
      .query({ container: '/attacker/', size: 100 })
      .set('BT-API-KEY', narrow)
      .expect(200);
    const againMs = performance.now() - again;
    const counted = performance.now();
    await request(t.http)
      .get('/tokens')
      .query({ type: 'card', size: 100 })
      .set('BT-API-KEY', merchant)
      .expect(200);
    console.log(
      `list of 100 uncounted tokens: first ${firstMs.toFixed(0)} ms, again ${againMs.toFixed(0)} ms; ` +
        `merchant list of 100: ${(performance.now() - counted).toFixed(0)} ms`,
    );
    const v2 = await request(t.http)
      .get('/v2/tokens')
      .query({ container: '/attacker/', size: 100 })
      .set('BT-API-KEY', narrow)
      .expect(200);
    answers.push(...(v2.body.data as Seen[]));
    const search = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', narrow)
      .send({ query: 'type:card', size: 100 })
      .expect(200);
    answers.push(...(search.body.data as Seen[]));
    const searchV2 = await request(t.http)
      .post('/v2/tokens/search')
      .set('BT-API-KEY', narrow)
      .send({ query: 'type:card', size: 100 })
      .expect(200);
    answers.push(...(searchV2.body.data as Seen[]));
    const mine = answers.filter((a) => ids.includes(a.id));
    expect(mine.length).toBeGreaterThanOrEqual(400);
    // Every answer of a token shows the same: the fingerprint or not.
    const fingerprints = new Set(mine.filter((a) => a.fingerprint !== undefined).map((a) => a.fingerprint));
    const { recovered } = tally(mine, ids, tries, seen.fingerprint);
    // Filtering by the victim's fingerprint would tell the candidate without showing any fingerprint.
    const filtered = await request(t.http)
      .get('/tokens')
      .query({ fingerprint: seen.fingerprint })
      .set('BT-API-KEY', narrow)
      .expect(200);
    const searched = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', narrow)
      .send({ query: `fingerprint:${seen.fingerprint}` })
      .expect(200);
    console.log(
      `lists/searches: 5 requests, ${fingerprints.size} fingerprints seen, card ${recovered ? 'recovered' : 'not recovered'}, ` +
        `fingerprint filter ${filtered.body.data.length + searched.body.data.length} matches`,
    );
    expect(fingerprints.size).toBeLessThanOrEqual(LIMIT - 1);
    expect(recovered).toBeUndefined();
    expect(filtered.body.data).toEqual([]);
    expect(searched.body.data).toEqual([]);
  });

  it("transactions' payment_method of 100 candidates: at most the limit of fingerprints", async () => {
    const number = victimNumber();
    const seen = await victim(number);
    const { tries, ids } = await plant(number);
    let requests = 1;
    const answers: Seen[] = [];
    for (const id of ids) {
      const tx = await request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', narrow)
        .send({ amount: 100, currency: 'USD', connection_id: connection, token: id })
        .expect(201);
      requests++;
      answers.push({ id, fingerprint: tx.body.payment_method.fingerprint });
      if (tx.body.payment_method.fingerprint === seen.fingerprint) break;
    }
    const { fingerprintsSeen, recovered } = tally(answers, ids, tries, seen.fingerprint);
    console.log(
      `transactions: ${requests} requests, ${fingerprintsSeen} fingerprints seen, card ${recovered ? 'recovered' : 'not recovered'}`,
    );
    expect(fingerprintsSeen).toBeLessThanOrEqual(LIMIT - 1);
    expect(recovered).toBeUndefined();
    const page = await request(t.http)
      .get('/orchestration/transactions?size=100')
      .set('BT-API-KEY', narrow)
      .expect(200);
    const listed = (page.body.data as { payment_method: { id: string; fingerprint?: string } }[]).map(
      (tx) => ({ id: tx.payment_method.id, fingerprint: tx.payment_method.fingerprint }),
    );
    expect(tally(listed, ids, tries, seen.fingerprint).recovered).toBeUndefined();
  });

  it('tokenizing the candidates again with the reading key is counted: uncounted tokens do not spare it', async () => {
    const number = victimNumber();
    await victim(number);
    const { tries } = await plant(number);
    const res = await tokenize(
      t,
      narrow,
      tries.slice(0, 50).map((n) => card(n, { containers: ['/attacker/'] })),
    );
    console.log(
      `tokenize again: ${res.status}, ${Array.isArray(res.body) ? res.body.length : 0} fingerprints`,
    );
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('card_enumeration_suspected');
  });

  it('a deduplicating tokenize of the candidates answers the existing tokens only as a counted tokenize would', async () => {
    const number = victimNumber();
    await victim(number);
    const { tries } = await plant(number);
    const res = await tokenize(
      t,
      narrow,
      tries.slice(0, 50).map((n) => card(n, { containers: ['/attacker/'], deduplicate_token: true })),
    );
    console.log(`deduplicating tokenize: ${res.status}`);
    expect(res.status).toBe(429);
  });

  it('PATCH answers of the candidates: at most the limit of fingerprints', async () => {
    const updater = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        rules: [{ priority: 1, container: '/attacker/', permissions: ['token:read', 'token:update'] }],
      })
    ).key;
    const number = victimNumber();
    const seen = await victim(number);
    const { tries, ids } = await plant(number);
    const answers: Seen[] = [];
    for (const id of ids) {
      const res = await request(t.http)
        .patch(`/tokens/${id}`)
        .set('BT-API-KEY', updater)
        .set('Content-Type', 'application/merge-patch+json')
        .send(JSON.stringify({ metadata: { n: '1' } }))
        .expect(200);
      answers.push(res.body);
    }
    const { fingerprintsSeen, recovered } = tally(answers, ids, tries, seen.fingerprint);
    console.log(`PATCH: 100 requests, ${fingerprintsSeen} fingerprints seen`);
    expect(fingerprintsSeen).toBeLessThanOrEqual(LIMIT - 1);
    expect(recovered).toBeUndefined();
  });

  it('20 concurrent reads of 20 uncounted candidates of one group at limit 10: exactly 10 fingerprints', async () => {
    const number = victimNumber();
    const tries = sameGroup(number, 20);
    const made = await tokenizeInBatches(
      t,
      pub,
      tries.map((n) => card(n, { containers: ['/attacker/'] })),
    );
    const reads = await Promise.all((made as Seen[]).map((token) => get(narrow, token.id)));
    const shown = reads.filter((res) => typeof res.body.fingerprint === 'string').length;
    console.log(`concurrent: 20 reads, ${shown} fingerprints seen`);
    expect(shown).toBe(LIMIT);
  });

  it('the legitimate flow: a browser tokenizes, the server reads the fingerprint; a second read counts nothing', async () => {
    const number = victimNumber();
    const made = await tokenize(t, pub, card(number)).expect(201);
    expect(made.body).not.toHaveProperty('fingerprint');
    const before = await counted();
    const first = await get(merchant, made.body.id);
    expect(first.body.fingerprint).toEqual(expect.any(String));
    expect(await counted()).toBe(before + 1);
    const again = await get(merchant, made.body.id);
    expect(again.body.fingerprint).toBe(first.body.fingerprint);
    const listed = await request(t.http)
      .get('/tokens')
      .query({ fingerprint: first.body.fingerprint })
      .set('BT-API-KEY', merchant)
      .expect(200);
    expect(listed.body.data.map((d: Seen) => d.fingerprint)).toEqual([first.body.fingerprint]);
    expect(await counted()).toBe(before + 1);
  });
});
