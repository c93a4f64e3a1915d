import { Client } from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { usePreparedStatements } from '../src/common/unit-of-work/unit-of-work';
import { WriteBatch } from '../src/common/unit-of-work/write-batch';
import { TenantKeysService } from '../src/common/crypto/tenant-keys.service';
import { newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { statementsDuring } from './support/statements';
import { createWebhookRow } from './support/webhooks';
import { createDatabase, dropDatabase } from './support/test-database';

/**
 * A tokenize of generated ids sends its tokens, search indexes, CVCs, audit rows and outbox events as one
 * statement of data-modifying CTEs, atomic without BEGIN and COMMIT (`UnitOfWork.statement`): all of it
 * commits, or none of it. Anything that must read or lock first (deduplication, given ids) or whose
 * record can veto the commit (an idempotency key) still runs in a transaction, and so does a tokenize of
 * cards by a key that receives their fingerprints (the card enumeration guard counts them first).
 */
describe('one-statement writes', () => {
  let t: TestApp;
  let tenant: TestTenant;
  /** Creates only: its answers carry no fingerprint, so its cards are not counted (the hot path). */
  let key: string;
  /** Creates and reads: its card tokenizes are counted. */
  let reader: string;
  let db: { name: string; url: string };
  let sql: DataSource;

  const card = (n: number) => ({
    type: 'card',
    data: { number: '4242424242424242', expiration_month: 1 + (n % 12), expiration_year: 2031, cvc: '123' },
    search_indexes: ['{{ data.number | last4 }}'],
  });

  const counts = async (): Promise<Record<string, number>> => {
    const [row] = await sql.query<Record<string, number>[]>(
      `SELECT (SELECT count(*) FROM tokens)::int AS tokens,
              (SELECT count(*) FROM token_cvcs)::int AS cvcs,
              (SELECT count(*) FROM token_search_indexes)::int AS indexes,
              (SELECT count(*) FROM audit_logs WHERE entity_type = 'token')::int AS audit,
              (SELECT count(*) FROM webhook_events)::int AS events,
              (SELECT count(*) FROM webhook_deliveries)::int AS deliveries`,
    );
    return row;
  };

  /** The statements a request sends (the rate limiter's shared counts aside). */
  const statementsOf = async (send: () => Promise<unknown>): Promise<string[]> =>
    (await statementsDuring(send)).filter((text) => !text.includes('rate_limits'));

  beforeAll(async () => {
    db = await createDatabase('vault_test_onestmt');
    t = await startApp({ DATABASE_URL: db.url, JOBS_ENABLED: 'false' });
    sql = t.app.get(DataSource);
    tenant = await newTenant(t);
    await createWebhookRow(sql, t.app.get(TenantKeysService), tenant.tenantId, {
      url: 'https://receiver.example/hook',
      events: ['token:created'],
    });
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create'],
      })
    ).key;
    reader = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
    ).key;
    // The tenant's keys loaded once (then cached), so that the counts below are of the write alone.
    await request(t.http).post('/tokens').set('BT-API-KEY', key).send(card(0)).expect(201);
  });
  afterAll(async () => {
    await t.close();
    await dropDatabase(db.name);
  });

  it('writes a tokenize of generated ids, its audit rows and its events in one statement', async () => {
    const before = await counts();
    let body: { id: string }[] = [];
    const statements = await statementsOf(async () => {
      const res = await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send([0, 1, 2].map(card))
        .expect(201);
      body = res.body as { id: string }[];
    });
    expect(statements).toHaveLength(1);
    expect(statements[0]).not.toMatch(/START TRANSACTION|BEGIN/);
    expect(await counts()).toEqual({
      tokens: before.tokens + 3,
      cvcs: before.cvcs + 3,
      indexes: before.indexes + 3,
      audit: before.audit + 3,
      events: before.events + 3,
      deliveries: before.deliveries + 3,
    });
    const audit = await sql.query<Record<string, string>[]>(
      `SELECT entity_id, operation, token_type, actor_type FROM audit_logs WHERE entity_id = ANY($1) ORDER BY entity_id`,
      [body.map((token) => token.id)],
    );
    expect(audit).toEqual(
      body
        .map((token) => token.id)
        .sort()
        .map((id) => ({ entity_id: id, operation: 'create', token_type: 'card', actor_type: 'application' })),
    );

    const one = await statementsOf(() =>
      request(t.http).post('/tokens').set('BT-API-KEY', key).send(card(4)).expect(201),
    );
    expect(one).toHaveLength(1);
  });

  it('sends one prepared statement, the same for a tokenize of 1, 3 or 100 cards', async () => {
    const spy = jest.spyOn(Client.prototype, 'query');
    const names: unknown[] = [];
    try {
      for (const n of [1, 1, 3, 100]) {
        spy.mockClear();
        await request(t.http)
          .post('/tokenize')
          .set('BT-API-KEY', key)
          .send(Array.from({ length: n }, (_, i) => card(20 + i)))
          .expect(201);
        const sent = spy.mock.calls
          .map(([query]: unknown[]) => query)
          .filter((query) => !JSON.stringify(query).includes('rate_limits'));
        expect(sent).toHaveLength(1);
        names.push((sent[0] as { name?: string }).name);
      }
    } finally {
      spy.mockRestore();
    }
    expect(names[0]).toMatch(/^one_[A-Za-z0-9_-]{40}$/);
    expect(new Set(names).size).toBe(1);
  });

  it.each([
    ['the outbox', 'webhook_deliveries'],
    ['the audit rows', 'audit_logs'],
    ['the CVCs', 'token_cvcs'],
  ])('writes nothing at all when %s fail', async (_what, table) => {
    await sql.query(
      `CREATE FUNCTION vault_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'refused for the test'; END $$`,
    );
    await sql.query(
      `CREATE TRIGGER vault_test_refuse BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION vault_test_refuse()`,
    );
    try {
      const before = await counts();
      const res = await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({ a: card(5), b: card(6) })
        .expect(500);
      expect(JSON.stringify(res.body)).not.toContain('4242424242424242');
      expect(await counts()).toEqual(before);
    } finally {
      await sql.query(`DROP TRIGGER vault_test_refuse ON ${table}`);
      await sql.query('DROP FUNCTION vault_test_refuse()');
    }
    await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .send({ a: card(5) })
      .expect(201);
  });

  it.each([
    [
      'deduplicate_token',
      { ...card(7), data: { ...card(7).data, number: '5555555555554444' }, deduplicate_token: true },
      {},
    ],
    ['a given id', { ...card(8), id: 'given-id-1' }, {}],
    [
      'deduplicate_token and an idempotency key',
      { ...card(9), data: { ...card(9).data, number: '5105105105105100' }, deduplicate_token: true },
      { 'BT-IDEMPOTENCY-KEY': 'one-statement-idem-1' },
    ],
  ])('uses a transaction with %s', async (_what, body, headers) => {
    const before = await counts();
    const statements = await statementsOf(() =>
      request(t.http).post('/tokens').set('BT-API-KEY', key).set(headers).send(body).expect(201),
    );
    // (An idempotency key's claim comes before, in a statement of its own.)
    expect(statements.slice(-1)).toEqual(['COMMIT']);
    expect(statements).toContain('START TRANSACTION');
    const after = await counts();
    expect(after.tokens).toBe(before.tokens + 1);
    expect(after.audit).toBe(before.audit + 1);
    expect(after.events).toBe(before.events + 1);
  });

  it('counts a card tokenized by a key that reads it in one read and one statement, without a transaction', async () => {
    // The key is resolved once, then from memory.
    await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', reader)
      .send({ type: 'token', data: 'warm' })
      .expect(201);
    const before = await counts();
    const statements = await statementsOf(() =>
      request(t.http).post('/tokens').set('BT-API-KEY', reader).send(card(10)).expect(201),
    );
    // The card enumeration guard's read (counts, stored tokens, its groups' versions), then the write: the
    // groups' versions moved where still those read, the counts, the token, its audit row and event.
    expect(statements).toHaveLength(2);
    expect(statements[0]).toMatch(/^SELECT 'counted' AS part/);
    expect(statements[1]).toMatch(/^WITH groups_0 AS \(INSERT INTO card_enumeration_groups/);
    expect(statements).not.toContain('START TRANSACTION');
    const after = await counts();
    expect(after.tokens).toBe(before.tokens + 1);
    expect(after.audit).toBe(before.audit + 1);
    expect(after.events).toBe(before.events + 1);
  });

  it('counts several cards tokenized by a key that reads them in the one statement that writes them', async () => {
    const before = await counts();
    const several = [20, 21, 22].map((n) => ({
      ...card(n),
      data: { ...card(n).data, number: ['4000056655665556', '5555555555554444', '4012888888881881'][n - 20] },
    }));
    const statements = await statementsOf(() =>
      request(t.http).post('/tokenize').set('BT-API-KEY', reader).send(several).expect(201),
    );
    // One round trip: the counts, the stored tokens it may read and its groups' versions read in the
    // statement's own snapshot, the limit decided, the groups' versions moved where still those seen, the
    // counts, the tokens, their audit rows and events.
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/^WITH candidates_0 AS \(SELECT g, n, f FROM unnest/);
    expect(statements[0]).toContain('INSERT INTO card_enumeration_groups');
    expect(statements[0]).toContain('INSERT INTO tokens');
    const after = await counts();
    expect(after.tokens).toBe(before.tokens + 3);
    expect(after.audit).toBe(before.audit + 3);
    expect(after.events).toBe(before.events + 3);
  });

  it('writes an idempotent tokenize in its claim and one statement, the record with it', async () => {
    const before = await counts();
    const statements = await statementsOf(() =>
      request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', key)
        .set('BT-IDEMPOTENCY-KEY', 'one-statement-idem-3')
        .send(card(11))
        .expect(201),
    );
    expect(statements).toHaveLength(2);
    expect(statements[0]).toContain('INSERT INTO idempotency_records');
    expect(statements[1]).toContain('UPDATE idempotency_records');
    expect(statements.join('\n')).not.toMatch(/START TRANSACTION|BEGIN/);
    const after = await counts();
    expect(after.tokens).toBe(before.tokens + 1);
    const [record] = await sql.query<{ state: string }[]>(
      `SELECT state FROM idempotency_records WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT 1`,
      [tenant.tenantId],
    );
    expect(record.state).toBe('completed');
  });

  it.each([
    ['in one statement', card(12)],
    [
      'in a transaction',
      { ...card(13), data: { ...card(13).data, number: '6011111111111117' }, deduplicate_token: true },
    ],
  ])(
    'refuses the whole change %s when a retry took the claim over (409), and writes nothing',
    async (_how, body) => {
      // The record's completion matches no row, as when another request has taken the claim over.
      await sql.query(
        `CREATE FUNCTION vault_test_skip() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
      );
      await sql.query(
        `CREATE TRIGGER vault_test_skip BEFORE UPDATE ON idempotency_records
           FOR EACH ROW WHEN (NEW.state = 'completed') EXECUTE FUNCTION vault_test_skip()`,
      );
      const send = () =>
        request(t.http)
          .post('/tokens')
          .set('BT-API-KEY', key)
          .set('BT-IDEMPOTENCY-KEY', `one-statement-taken-${JSON.stringify(body).length}`)
          .send(body);
      try {
        const before = await counts();
        const res = await send().expect(409);
        expect(res.headers['retry-after']).toBe('1');
        expect(res.headers['content-type']).toContain('application/problem+json');
        expect(await counts()).toEqual(before);
      } finally {
        await sql.query('DROP TRIGGER vault_test_skip ON idempotency_records');
        await sql.query('DROP FUNCTION vault_test_skip()');
      }
      // The key was given back: the retry runs and succeeds.
      await send().expect(201);
    },
  );

  it('replays an idempotent tokenize with the response of the transaction', async () => {
    const send = () =>
      request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .set('BT-IDEMPOTENCY-KEY', 'one-statement-idem-2')
        .send({ a: card(10) })
        .expect(201);
    const first = await send();
    const again = await send();
    expect(again.headers['bt-idempotency-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('numbers parameters and names CTEs across the pieces of a batch, and hands each its result', async () => {
    const batch = new WriteBatch();
    const results: unknown[] = [];
    for (const word of ['one', 'two'])
      batch.add(
        ({ p, name }) => ({
          ctes: [
            `${name('given')} AS (SELECT ${p.add(word)}::text AS w)`,
            `${name('upper')} AS (SELECT upper(w) AS w FROM ${name('given')})`,
          ],
          result: `(SELECT w || ${p.add('!')}::text FROM ${name('upper')})`,
        }),
        { then: (value) => results.push(value) },
      );
    batch.add(({ p, name }) => ({ ctes: [`${name('nothing')} AS (SELECT ${p.add(1)}::int)`] }));
    expect(batch.size).toBe(3);
    await batch.run((text, params) => sql.query(text, params));
    expect(results).toEqual(['ONE!', 'TWO!']);
    expect(
      await WriteBatch.runOne(
        (text, params) => sql.query(text, params),
        () => ({ ctes: [] }),
      ),
    ).toBe(null);
  });

  // Last: TransactionHost.getInstance() is the newest application's, and this one closes its own.
  it('sends it unnamed with DB_PREPARED_STATEMENTS=false', async () => {
    const other = await startApp({
      DATABASE_URL: db.url,
      JOBS_ENABLED: 'false',
      DB_PREPARED_STATEMENTS: 'false',
    });
    const spy = jest.spyOn(Client.prototype, 'query');
    try {
      await request(other.http).post('/tokenize').set('BT-API-KEY', key).send(card(30)).expect(201);
      const writes = spy.mock.calls
        .map(([query]: unknown[]) => query)
        .filter((query) => JSON.stringify(query).includes('INSERT INTO tokens'));
      expect(writes).toHaveLength(1);
      expect(typeof writes[0]).toBe('string');
    } finally {
      spy.mockRestore();
      await other.close();
      usePreparedStatements(true);
    }
  });
});
