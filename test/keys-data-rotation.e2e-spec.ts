import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { TenantKeysService } from '../src/common/crypto/tenant-keys.service';
import { openCvc, openData } from '../src/modules/tokens/data/seal-data';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { spawnJs } from './support/processes';
import { createDatabase, dropDatabase } from './support/test-database';
import { waitFor } from './support/wait';

const BATCHES = 15;
const CARDS = 40;

/**
 * `vault keys rotate --tenant-keys` against a running server taking writes: killed with SIGKILL at
 * random points, every token (and CVC) still opens under the generation it names, none is lost or
 * written twice; run again, it goes on (no new key) until every token, those written meanwhile too, is
 * under the new generation; the server took every write (no 5xx) and reads them all.
 */
describe('keys rotate --tenant-keys, killed and run again, writes going on', () => {
  let db: { name: string; url: string };
  let t: TestApp;
  let pg: Client;
  const master = `v1:${randomBytes(32).toString('base64')}`;
  const given = new Map<string, unknown>();
  let key: string;
  const cli = (args: string[]) =>
    spawnJs('bin/vault.js', args, {
      LOG_LEVEL: 'warn',
      DATABASE_URL: db.url,
      KEY_PROVIDER: 'env',
      ENCRYPTION_KEYS: master,
    });
  const tokenize = async (items: { type: string; data: unknown }[]) => {
    const res = await request(t.http).post('/tokenize').set('BT-API-KEY', key).send(items);
    expect(res.status).toBe(201);
    (res.body as { id: string }[]).forEach((token, i) => {
      const { cvc: _cvc, ...data } = items[i].data as Record<string, unknown>;
      given.set(token.id, data);
    });
  };
  let written = 0;
  /** Tokenizes (one token a request) until `stop` is set; every answer must be a 201. */
  const writing = () => {
    const state = { stop: false, failures: [] as number[] };
    const done = (async () => {
      while (!state.stop) {
        const data = { secret: `written meanwhile ${written++}` };
        const res = await request(t.http)
          .post('/tokens')
          .set('BT-API-KEY', key)
          .send({ type: 'token', data });
        if (res.status === 201) given.set(res.body.id, data);
        else state.failures.push(res.status);
      }
    })();
    return { state, done };
  };
  /** Every token and CVC opened by the server's own keys, under the generation its row names. */
  const expectAllOpen = async () => {
    const keys = t.app.get(TenantKeysService);
    // The writer goes on meanwhile, one request at a time: every token answered before the read is
    // there, and at most one row is a write committed but not answered yet when the read returns.
    const answered = new Set(given.keys());
    const { rows } = await pg.query<{ tenant_id: string; id: string; data: Buffer; data_key: number }>(
      'SELECT tenant_id, id, data, data_key FROM tokens',
    );
    const ids = new Set(rows.map((row) => row.id));
    expect([...answered].filter((id) => !ids.has(id))).toEqual([]);
    expect(rows.filter((row) => !given.has(row.id)).length).toBeLessThanOrEqual(1);
    for (const row of rows)
      if (given.has(row.id))
        expect(openData(await keys.keysWith(row.tenant_id, [row.data_key]), row)).toEqual(given.get(row.id));
      else openData(await keys.keysWith(row.tenant_id, [row.data_key]), row);
    const cvcs = await pg.query<{ tenant_id: string; token_id: string; cvc: Buffer; data_key: number }>(
      'SELECT tenant_id, token_id, cvc, data_key FROM token_cvcs',
    );
    expect(cvcs.rows).toHaveLength(CARDS);
    for (const c of cvcs.rows) {
      const keys2 = await keys.keysWith(c.tenant_id, [c.data_key]);
      expect(
        openCvc(keys2, { tenant_id: c.tenant_id, id: c.token_id }, { cvc: c.cvc, dataKey: c.data_key }),
      ).toBe('737');
    }
    return rows;
  };

  beforeAll(async () => {
    db = await createDatabase('vault_test_data_keys');
    t = await startApp({ DATABASE_URL: db.url, ENCRYPTION_KEYS: master, JOBS_ENABLED: 'false' });
    pg = new Client({ connectionString: db.url });
    await pg.connect();
    for (const name of ['first', 'second']) {
      const tenant = await newTenant(t, name);
      key = (
        await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:create'] })
      ).key;
      for (let b = 0; b < BATCHES; b++)
        await tokenize(
          Array.from({ length: 100 }, (_, i) => ({ type: 'token', data: { secret: `${name} ${b} ${i}` } })),
        );
    }
    await tokenize(
      Array.from({ length: CARDS }, (_, i) => ({
        type: 'card',
        data: {
          number: '4242424242424242',
          expiration_month: 12,
          expiration_year: 2031 + (i % 5),
          cvc: '737',
        },
      })),
    );
  }, 120_000);

  afterAll(async () => {
    await pg?.end();
    await t?.close();
    await dropDatabase(db.name);
  });

  it('SIGKILL at random points; every token opens throughout; a last run finishes with writes going on', async () => {
    const writes = writing();
    // Killed twice: once a few milliseconds in (before its first batch, or within it), once a random
    // time after a batch committed.
    const early = cli(['keys', 'rotate', '--tenant-keys', '--batch', '100']);
    await new Promise((resolve) => setTimeout(resolve, randomInt(0, 400)));
    early.child.kill('SIGKILL');
    await early.exited;
    await expectAllOpen();

    const late = cli(['keys', 'rotate', '--tenant-keys', '--batch', '100']);
    await waitFor(() => late.stderr().includes('sealed again: '), { timeoutMs: 60_000, intervalMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, randomInt(0, 300)));
    late.child.kill('SIGKILL');
    await late.exited;
    const between = await expectAllOpen();
    const status = cli(['keys', 'status']);
    expect(await status.exited).toBe(0);
    const rotation = JSON.parse(status.stdout()).data_keys.rotation;
    // Unless the kill came after the last batch, the run is left unfinished and shows how far it got.
    if (rotation) expect(rotation.done).toBeLessThanOrEqual(rotation.total);
    expect(between.some((row) => row.data_key === 1)).toBe(true);

    const last = cli(['keys', 'rotate', '--tenant-keys', '--batch', '100']);
    expect(await last.exited).toBe(0);
    const result = JSON.parse(last.stdout());
    writes.state.stop = true;
    await writes.done;
    expect(writes.state.failures).toEqual([]);
    expect(written).toBeGreaterThan(0);
    // One generation made in all, whichever run made it.
    const { rows: generations } = await pg.query('SELECT tenant_id, generation FROM tenant_data_keys');
    expect(generations.map((row) => row.generation).sort()).toEqual([1, 1]);
    expect(result.tenants === 0 ? result.resumed : true).toBe(true);

    // Written after the last run ended: sealed under the new generation by the server itself.
    await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', key)
      .send({ type: 'token', data: { secret: 'after' } })
      .expect(201)
      .then((res) => given.set(res.body.id, { secret: 'after' }));
    const rows = await expectAllOpen();
    // The writer stopped: every row is one it was answered for.
    expect(rows).toHaveLength(given.size);
    expect(rows.filter((row) => row.data_key !== 1)).toEqual([]);
    const done = cli(['keys', 'status']);
    await done.exited;
    expect(JSON.parse(done.stdout()).data_keys.rotation).toBeNull();

    // Every generation of every data key, and the data sealed under them, are nowhere in the clear.
    const dump = execFileSync('pg_dump', ['--data-only', db.url], {
      maxBuffer: 256 * 1024 * 1024,
    }).toString();
    const keys = t.app.get(TenantKeysService);
    const tenants = [...new Set(rows.map((row) => row.tenant_id))];
    const secrets = (await Promise.all(tenants.map((id) => keys.keysWith(id, [0, 1])))).flatMap((k) =>
      [...k.dataKeys.values()].flatMap((key) => [key.toString('hex'), key.toString('base64')]),
    );
    expect(secrets).toHaveLength(tenants.length * 4);
    const output = [dump, t.logs.join('\n'), last.stdout(), last.stderr()].join('\n');
    for (const secret of [...secrets, 'written meanwhile', 'first 3 7', '4242424242424242'])
      expect(output).not.toContain(secret);
  }, 180_000);
});
