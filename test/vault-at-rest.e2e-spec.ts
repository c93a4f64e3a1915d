import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { AuditCheckpointer } from '../src/common/audit/audit-checkpointer.service';
import { AuditSigningKeys } from '../src/common/audit/audit-signing-keys.service';
import { AuditVerifier } from '../src/common/audit/audit-verifier.service';
import { Clock } from '../src/common/jobs/clock';
import { AdminOperations } from '../src/modules/admin/admin-operations';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { DecryptionError } from '../src/common/crypto/aead';
import { TokensService } from '../src/modules/tokens/tokens.service';
import { newApplication, newTenant, privatePrincipal, startApp, TestApp, TestTenant } from './support/app';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { statementsDuring } from './support/statements';
import { createDatabase, dropDatabase } from './support/test-database';

const CARDS = [
  { number: '4242424242424242', cvc: '731' },
  { number: '5555555555554444', cvc: '482' },
  { number: '378282246310005', cvc: '6194' },
  { number: '6011111111111117', cvc: '905' },
];
const ACCOUNTS = ['000123456789', '98765432101234'];
const INDEX_VALUE = 'index-value-Zq81';

function dumpTables(url: string): { text: string; fields: string[] } {
  const text = execFileSync('pg_dump', ['--data-only', '--no-owner', url], {
    encoding: 'utf8',
    maxBuffer: 512 * 1024 * 1024,
  });
  // COPY ... FROM stdin rows are tab-separated: every column value on its own, to compare short values exactly.
  const fields = text.split('\n').flatMap((line) => line.split('\t'));
  return { text, fields };
}

describe('sensitive data at rest', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let key: string;
  // A database of its own: the dump then holds only this file's rows, so that a three-digit CVC found as
  // a field can only be a leak (the shared database holds counters and amounts of every other test).
  let db: { name: string; url: string };

  beforeAll(async () => {
    db = await createDatabase('vault_test_atrest');
    // No scheduled jobs: the statement count below is of the request alone.
    t = await startApp({ LOG_LEVEL: 'trace', DATABASE_URL: db.url, JOBS_ENABLED: 'false' });
    tenant = await newTenant(t);
    // A webhook subscribed to token:created: each tokenize records its events (the outbox statement
    // writes rows), so that the dump and the statement count below include them.
    await t.app.get(DataSource).query(
      `INSERT INTO webhooks (tenant_id, id, name, url, events, status, secret, created_at)
         VALUES ($1, gen_random_uuid(), 'hook', 'https://receiver.example/hook', ARRAY['token:created']::text[], 'enabled', '\\x00'::bytea, now())`,
      [tenant.tenantId],
    );
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:use', 'token:search'],
      })
    ).key;
  });
  afterAll(async () => {
    await t.close();
    await dropDatabase(db.name);
  });

  it('keeps no card number, CVC, account number, search index value or key in clear in the database or the logs', async () => {
    const body = {
      cards: CARDS.map((c) => ({
        type: 'card',
        data: { number: c.number, expiration_month: 1, expiration_year: 2031, cvc: c.cvc },
        search_indexes: ['{{ data.number }}'],
      })),
      banks: ACCOUNTS.map((a) => ({
        type: 'bank',
        data: { routing_number: '021000021', account_number: a },
      })),
      secret: { type: 'token', data: INDEX_VALUE, search_indexes: ['{{ data }}'] },
    };
    // With an idempotency key, so that the stored record (and its sealed response) is in the dump too.
    const res = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .set('BT-IDEMPOTENCY-KEY', 'at-rest-1')
      .send(body)
      .expect(201);
    const found = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', key)
      .send({ query: `data:${CARDS[0].number}` })
      .expect(200);
    expect(found.body.data).toHaveLength(1);
    const responses = JSON.stringify([res.body, found.body]);

    const { text, fields } = dumpTables(db.url);
    expect(text).toContain(res.body.secret.id);
    // The dump holds the audit log of this tokenize and search, so the scan below covers log messages.
    const audit: { message: string }[] = await t.app
      .get(DataSource)
      .query(`SELECT message FROM audit_logs WHERE tenant_id = $1 AND entity_type = 'token'`, [
        tenant.tenantId,
      ]);
    expect(audit.length).toBe(CARDS.length + ACCOUNTS.length + 2);
    const records = await t.app
      .get(DataSource)
      .query('SELECT 1 FROM idempotency_records WHERE tenant_id = $1', [tenant.tenantId]);
    expect(records).toHaveLength(1);
    for (const { message } of audit) expect(text).toContain(message);
    const logs = t.logs.join('\n');
    for (const secret of [
      ...CARDS.map((c) => c.number),
      ...ACCOUNTS,
      INDEX_VALUE,
      key,
      tenant.managementKey,
    ]) {
      expect({ secret, inDump: text.includes(secret) }).toEqual({ secret, inDump: false });
      expect({ secret, inLogs: logs.includes(secret) }).toEqual({ secret, inLogs: false });
      expect({ secret, inResponses: responses.includes(secret) }).toEqual({ secret, inResponses: false });
    }
    for (const { cvc } of CARDS) {
      expect({ cvc, asColumn: fields.includes(cvc) }).toEqual({ cvc, asColumn: false });
      expect(text).not.toContain(`"cvc"`);
      expect(responses).not.toContain(`"${cvc}"`);
    }
  });

  it('tokenizes 100 cards with a constant number of SQL statements', async () => {
    // A key that does not read what it tokenizes (a browser's, an import's) gets no fingerprints, so the
    // card enumeration guard never counts it and its write is the one statement. A key that reads them
    // is counted under a lock in a transaction: more statements, but as many for 100 cards as for 1.
    const importKey = (
      await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:create'] })
    ).key;
    const statementsFor = async (n: number, as = importKey): Promise<number> => {
      const cards = Array.from({ length: n }, () => ({
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 1, expiration_year: 2031, cvc: '123' },
        search_indexes: ['{{ data.number | last4 }}'],
      }));
      const statements = await statementsDuring(() =>
        request(t.http).post('/tokenize').set('BT-API-KEY', as).send(cards).expect(201),
      );
      // The rate limiter adds its counts to a shared row about once a second, whichever request is
      // running then: not a statement of this request.
      return statements.filter((sql) => !sql.includes('rate_limits')).length;
    };
    await statementsFor(1); // the tenant's keys are loaded once, then cached
    const one = await statementsFor(1); // a prepared statement
    const ten = await statementsFor(10);
    const hundred = await statementsFor(100);
    process.stdout.write(`SQL statements: 1 card -> ${one}, 10 cards -> ${ten}, 100 cards -> ${hundred}\n`);
    // One statement: the tokens with their search indexes and CVCs, the audit rows and the token:created
    // events (the outbox), atomic by itself, without BEGIN and COMMIT; the key is resolved from memory.
    expect([one, ten, hundred]).toEqual([1, 1, 1]);

    await statementsFor(1, key);
    const counted = [
      await statementsFor(1, key),
      await statementsFor(10, key),
      await statementsFor(100, key),
    ];
    process.stdout.write(`SQL statements for a key that reads its tokens: ${counted.join(', ')}\n`);
    // The card enumeration guard: one read (what was counted, the stored tokens, the groups' versions),
    // then one write (the groups' versions moved where still those read, the counts, and everything the
    // one statement above holds), without a transaction.
    expect(counted).toEqual([2, 2, 2]);
  });

  it('fails to decrypt a tampered ciphertext or one moved to another row', async () => {
    const res = await request(t.http)
      .post('/tokenize')
      .set('BT-API-KEY', key)
      .send([
        { type: 'card', data: { number: '4242424242424242', expiration_month: 1, expiration_year: 2031 } },
        { type: 'card', data: { number: '5555555555554444', expiration_month: 1, expiration_year: 2031 } },
      ])
      .expect(201);
    const [a, b] = res.body.map((x: { id: string }) => x.id);
    const tokens = t.app.get(TokensService);
    const use = (id: string) => tokens.loadForUse(privatePrincipal(tenant.tenantId), id);
    expect((await use(a))?.data).toMatchObject({ number: '4242424242424242' });

    const db = t.app.get(DataSource);
    await db.query('UPDATE tokens SET data = (SELECT data FROM tokens WHERE id = $2) WHERE id = $1', [a, b]);
    await expect(use(a)).rejects.toBeInstanceOf(DecryptionError);
    await expect(use(b)).resolves.toMatchObject({ data: { number: '5555555555554444' } });
    await db.query(
      // Flips every bit of one byte (overwriting it with a constant left it unchanged 1 time in 256).
      `UPDATE tokens SET data = set_byte(data, 19, get_byte(data, 19) # 255) WHERE id = $1`,
      [b],
    );
    await expect(use(b)).rejects.toBeInstanceOf(DecryptionError);
  });
});

describe('master key rotation', () => {
  const keysListed = async (app: TestApp) =>
    (await app.app.get(AuditSigningKeys).published()).map((k) => k.verifier_key);

  it('rotates master keys without downtime: v1, then v1+v2 and rotate while serving, then v2 alone; orchestration still charges; a process without v2 then refuses to start', async () => {
    const db = await createDatabase('vault_test_rotation');
    const v1 = `v1:${randomBytes(32).toString('base64')}`;
    const v2 = `v2:${randomBytes(32).toString('base64')}`;
    const boot = (keys: string) => startApp({ DATABASE_URL: db.url, ENCRYPTION_KEYS: keys });
    const card = {
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 1, expiration_year: 2031 },
    };
    try {
      let t = await boot(v1);
      const tenant = await newTenant(t);
      const key = (
        await newApplication(t, tenant.managementKey, {
          type: 'private',
          permissions: ORCHESTRATION_PERMISSIONS,
        })
      ).key;
      const created = await request(t.http).post('/tokenize').set('BT-API-KEY', key).send(card).expect(201);
      const connection = await newConnection(t, key, { currencies: ['USD'], countries: ['US'] });
      const charge = (app: TestApp, token: string) =>
        request(app.http)
          .post('/orchestration/transactions')
          .set('BT-API-KEY', key)
          .send({ amount: 500, currency: 'USD', connection_id: connection.id, token })
          .expect(201)
          .then((res) => res.body.status as string);
      expect(await charge(t, created.body.id)).toBe('authorization_succeeded');
      await t.close();

      // v2 added: the instance serves before, during and after the rotation without a restart.
      t = await boot(`${v1},${v2}`);
      const during = await request(t.http).post('/tokenize').set('BT-API-KEY', key).send(card).expect(201);
      // The audit log's first checkpoints, signed by a key sealed under v1.
      await t.app.get(AuditCheckpointer).run();
      const signer = await keysListed(t);
      expect(signer).toHaveLength(1);
      const [rotated, charged] = await Promise.all([
        t.app.get(AdminOperations).run({ op: 'keys.rotate' }),
        charge(t, created.body.id),
      ]);
      expect(rotated).toEqual({ rewrapped_tenants: 1, active_version: 'v2' });
      expect(charged).toBe('authorization_succeeded');
      expect(await charge(t, during.body.id)).toBe('authorization_succeeded');
      await t.close();

      // v1 dropped: every token and the connection's secret still open; orchestration still charges.
      t = await boot(v2);
      const use = () =>
        t.app.get(TokensService).loadForUse(privatePrincipal(tenant.tenantId), created.body.id);
      await expect(use()).resolves.toMatchObject({ data: { number: '4242424242424242' } });
      expect(await charge(t, created.body.id)).toBe('authorization_succeeded');
      expect(await charge(t, during.body.id)).toBe('authorization_succeeded');
      // The audit signing key was sealed again under v2: without v1 the same key signs on, and every
      // checkpoint still verifies.
      t.app.get(Clock).advance(10_000);
      await t.app.get(AuditCheckpointer).run();
      expect(await keysListed(t)).toEqual(signer);
      expect((await t.app.get(AuditVerifier).verify()).problems).toEqual([]);
      await t.close();

      // Every tenant key is wrapped by v2 now: a process holding only v1 stops at start, naming v2
      // (docs/operations.md, master keys), instead of answering 500 on the first request that needs a key.
      await expect(boot(v1)).rejects.toThrow(/master key v2/);
    } finally {
      await dropDatabase(db.name);
    }
  });
});
