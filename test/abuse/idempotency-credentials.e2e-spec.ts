import request from 'supertest';
import { DataSource } from 'typeorm';
import { TestApp, TestTenant } from '../support/app';
import { scene } from '../support/attacker';

/** Every row of every table of the schema as text (bytea columns as hex), to search for a secret. */
async function dumpDatabase(db: DataSource): Promise<string> {
  const tables: { name: string }[] = await db.query(
    `SELECT quote_ident(table_name) AS name FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  const parts: string[] = [];
  for (const { name } of tables) {
    const rows: { row: string }[] = await db.query(`SELECT row_to_json(t)::text AS row FROM ${name} t`);
    parts.push(...rows.map((r) => r.row));
  }
  return parts.join('\n');
}

const hex = (text: string): string => Buffer.from(text, 'utf8').toString('hex');

/**
 * Abuse class: credentials in the idempotency store. Idempotency is scoped to the calling application,
 * and an application can hold several keys (rotation; one per team or service): a second holder of a
 * key of the same application sending the same `BT-IDEMPOTENCY-KEY` to a route that answers a new
 * credential must never be sent the first holder's credential, and no such answer may rest in the
 * idempotency table for 24 hours.
 */
describe('abuse: no credential in the idempotency store', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let first: string;
  let second: string;

  beforeAll(async () => {
    const s = await scene('idempotency credentials', {});
    ({ t, db, tenant } = s);
    first = tenant.managementKey;
    // A second key of the same (management) application: another holder, same idempotency scope.
    second = (
      await request(t.http)
        .post(`/applications/${tenant.managementApplicationId}/keys`)
        .set('BT-API-KEY', first)
        .expect(201)
    ).body.key;
  });
  afterAll(() => t.close());

  const records = async (): Promise<number> =>
    (
      await db.query('SELECT count(*)::int AS n FROM idempotency_records WHERE tenant_id = $1', [
        tenant.tenantId,
      ])
    )[0].n;

  it('key create: two holders with one idempotency key get two different keys, and nothing is stored', async () => {
    const path = `/applications/${tenant.managementApplicationId}/keys`;
    const a = await request(t.http).post(path).set('BT-API-KEY', first).set('BT-IDEMPOTENCY-KEY', 'rotate-1');
    const b = await request(t.http)
      .post(path)
      .set('BT-API-KEY', second)
      .set('BT-IDEMPOTENCY-KEY', 'rotate-1');
    process.stdout.write(
      `key create twice with one idempotency key: ${a.status}, ${b.status}, replayed=${String(b.headers['bt-idempotency-replayed'])}, same key=${String(a.body.key === b.body.key)}, records=${await records()}\n`,
    );
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(typeof a.body.key).toBe('string');
    expect(b.body.key).not.toBe(a.body.key);
    expect(b.body.id).not.toBe(a.body.id);
    expect(await records()).toBe(0);
    const dump = await dumpDatabase(db);
    for (const key of [a.body.key as string, b.body.key as string, second]) {
      expect(dump).not.toContain(key);
      expect(dump).not.toContain(hex(key));
    }
  });

  it('application create: the same, for the new application and its key', async () => {
    const body = { name: 'checkout', type: 'private', permissions: ['token:create'] };
    const a = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', first)
      .set('BT-IDEMPOTENCY-KEY', 'app-1')
      .send(body);
    const b = await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', second)
      .set('BT-IDEMPOTENCY-KEY', 'app-1')
      .send(body);
    process.stdout.write(
      `application create twice with one idempotency key: ${a.status}, ${b.status}, replayed=${String(b.headers['bt-idempotency-replayed'])}, same key=${String(a.body.key === b.body.key)}, records=${await records()}\n`,
    );
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(b.body.key).not.toBe(a.body.key);
    expect(b.body.id).not.toBe(a.body.id);
    expect(await records()).toBe(0);
    const dump = await dumpDatabase(db);
    for (const key of [a.body.key as string, b.body.key as string]) {
      expect(dump).not.toContain(key);
      expect(dump).not.toContain(hex(key));
    }
  });

  it('webhook create (its signing secret) is not stored either', async () => {
    const before = await records();
    const body = { name: 'w', url: 'https://receiver.example/hooks', events: ['token:created'] };
    const a = await request(t.http)
      .post('/webhooks')
      .set('BT-API-KEY', first)
      .set('BT-IDEMPOTENCY-KEY', 'hook-1')
      .send(body);
    const b = await request(t.http)
      .post('/webhooks')
      .set('BT-API-KEY', second)
      .set('BT-IDEMPOTENCY-KEY', 'hook-1')
      .send(body);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.secret).not.toBe(a.body.secret);
    expect(await records()).toBe(before);
  });

  it('the OpenAPI document says that these routes ignore BT-IDEMPOTENCY-KEY', async () => {
    const doc = (await request(t.http).get('/openapi.json').expect(200)).body;
    const operations = [
      doc.paths['/applications'].post,
      doc.paths['/applications/{id}/keys'].post,
      doc.paths['/sessions'].post,
      doc.paths['/webhooks'].post,
    ];
    for (const operation of operations) {
      const names = (operation.parameters ?? []).map((p: { name: string }) => p.name);
      expect(names).not.toContain('BT-IDEMPOTENCY-KEY');
      expect(operation.description).toMatch(/BT-IDEMPOTENCY-KEY is ignored/);
    }
  });
});
