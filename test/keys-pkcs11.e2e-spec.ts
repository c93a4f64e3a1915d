import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { DecryptionError } from '../src/common/crypto/aead';
import { Pkcs11Device } from '../src/common/crypto/pkcs11/pkcs11-device';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { spawnJs } from './support/processes';
import { initToken, SOFTHSM_MODULE, softHsmTokens } from './support/softhsm';
import { ADMIN_URL, createDatabase, dropDatabase } from './support/test-database';

const PIN = '7294-1183';
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/** The value of one sample of a Prometheus counter in an exposition, 0 when absent. */
const counted = (text: string, operation: string): number =>
  Number(
    new RegExp(`^vault_key_provider_operations_total\\{operation="${operation}"\\} (\\d+)$`, 'm').exec(
      text,
    )?.[1] ?? 0,
  );

/**
 * KEY_PROVIDER=pkcs11 against a real PKCS#11 module: SoftHSM2 with a token initialised for this run in a
 * temporary directory. The key-encrypting keys are made by the token and never leave it.
 */
describe('keys in an HSM: KEY_PROVIDER=pkcs11 (SoftHSM2)', () => {
  let tokens: string;
  let db: { name: string; url: string };
  let env: Record<string, string>;
  const apps: TestApp[] = [];
  const start = async (extra: Record<string, string> = {}) => {
    const t = await startApp({ DATABASE_URL: db.url, ...env, ...extra });
    apps.push(t);
    return t;
  };
  const stop = async (t: TestApp) => {
    apps.splice(apps.indexOf(t), 1);
    await t.close();
  };
  const cli = async (args: string[], extra: Record<string, string> = {}) => {
    const run = spawnJs('bin/vault.js', args, { LOG_LEVEL: 'warn', DATABASE_URL: db.url, ...env, ...extra });
    const code = await run.exited;
    return { code, stdout: run.stdout().trim(), stderr: run.stderr().trim() };
  };
  const metrics = async (t: TestApp) => (await request(t.http).get('/metrics').expect(200)).text;

  beforeAll(async () => {
    tokens = softHsmTokens();
    initToken('vault-e2e', PIN);
    env = {
      KEY_PROVIDER: 'pkcs11',
      ENCRYPTION_KEYS: '',
      PKCS11_MODULE: SOFTHSM_MODULE,
      PKCS11_TOKEN_LABEL: 'vault-e2e',
      PKCS11_PIN: PIN,
      JOBS_ENABLED: 'false',
      METRICS_ENABLED: 'true',
    };
    db = await createDatabase('vault_test_pkcs11');
  }, 60_000);

  afterAll(async () => {
    for (const t of [...apps]) await t.close();
    await dropDatabase(db.name);
  });

  it('a server whose token holds no key stops at start, naming `vault keys ceremony --provider pkcs11`; a wrong PIN or token is named, the PIN never', async () => {
    await expect(start()).rejects.toThrow(
      /KEY_PROVIDER=pkcs11: the token "vault-e2e" holds no key labelled vault-kek-v<N>; make one with `vault keys ceremony --provider pkcs11`/,
    );
    const wrongPin = await cli(['keys', 'status'], { PKCS11_PIN: '0000-0000' });
    expect(wrongPin.code).toBe(1);
    expect(wrongPin.stderr).toMatch(/could not open the token "vault-e2e" through .*\(CKR_PIN_INCORRECT\)/);
    const missing = await cli(['keys', 'status'], { PKCS11_TOKEN_LABEL: 'elsewhere' });
    expect(missing.stderr).toMatch(/no token labelled "elsewhere"/);
    const noPin = await cli(['keys', 'status'], { PKCS11_PIN: '' });
    expect(noPin.stderr).toMatch(/PKCS11_PIN: required with KEY_PROVIDER=pkcs11/);
    for (const run of [wrongPin, missing, noPin]) expect(`${run.stdout}${run.stderr}`).not.toContain(PIN);
  }, 60_000);

  it('`vault keys ceremony --provider pkcs11` makes v1 inside the token: sensitive, not extractable, its value unreadable; its KCV recorded', async () => {
    const made = await cli(['keys', 'ceremony', '--provider', 'pkcs11']);
    expect(made.code).toBe(0);
    const generated = JSON.parse(made.stdout) as { version: string; provider: string; kcv: string };
    expect(generated).toEqual({
      version: 'v1',
      provider: 'pkcs11',
      kcv: expect.stringMatching(/^[0-9A-F]{6}$/),
    });
    expect(made.stderr).toMatch(/Key v1 made in the HSM \(KCV [0-9A-F]{6}\)/);

    const device = Pkcs11Device.of({
      module: SOFTHSM_MODULE,
      tokenLabel: 'vault-e2e',
      pin: PIN,
      keyLabel: 'vault-kek',
    });
    expect(device.versions()).toEqual(['v1']);
    expect(device.attributes('v1')).toEqual({ extractable: false, sensitive: true, value: undefined });
    // Wrapped by the token, opened by it only under the same additional data; a changed byte is refused
    // as a bad value (DecryptionError), not as a device failure.
    const kek = device.key('v1');
    const wrapped = kek.wrap(Buffer.alloc(32, 7), 'tenant-key:a');
    expect(wrapped).toHaveLength(12 + 32 + 16);
    expect(kek.unwrap(wrapped, 'tenant-key:a')).toEqual(Buffer.alloc(32, 7));
    expect(() => kek.unwrap(wrapped, 'tenant-key:b')).toThrow(DecryptionError);
    const tampered = Buffer.from(wrapped);
    tampered[20] ^= 1;
    expect(() => kek.unwrap(tampered, 'tenant-key:a')).toThrow(DecryptionError);
    expect(device.counts.failed).toBe(0);

    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      const { rows } = await pg.query(
        `SELECT version, provider, encode(check_value, 'hex') AS kcv FROM master_key_checks`,
      );
      expect(rows).toEqual([{ version: 'v1', provider: 'pkcs11', kcv: generated.kcv.toLowerCase() }]);
    } finally {
      await pg.end();
    }
    const status = JSON.parse((await cli(['keys', 'status'])).stdout);
    expect(status.provider).toBe('pkcs11');
    expect(status.versions).toEqual([{ version: 'v1', provider: 'pkcs11', active: true, wraps: 0 }]);
  }, 60_000);

  let key: string;
  let tokenId: string;
  let other: { key: string; tokenId: string };

  it('tokenizes, reads and pays: every wrap and unwrap of a data key is a call into the token, counted', async () => {
    const t = await start();
    const before = await metrics(t);
    const tenant = await newTenant(t, 'hsm');
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    const made = await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', key)
      .send({ type: 'card', data: CARD })
      .expect(201);
    tokenId = made.body.id;
    await request(t.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(200);
    const after = await metrics(t);
    // A new tenant: its data key made and wrapped by the token; later uses come from the cache.
    expect(counted(after, 'wrap') - counted(before, 'wrap')).toBe(1);
    expect(counted(after, 'failed')).toBe(0);

    const second = await newTenant(t, 'hsm 2');
    const otherKey = (
      await newApplication(t, second.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
    ).key;
    const otherToken = await request(t.http)
      .post('/tokens')
      .set('BT-API-KEY', otherKey)
      .send({ type: 'card', data: { ...CARD, number: '5555555555554444' } })
      .expect(201);
    other = { key: otherKey, tokenId: otherToken.body.id };
    await stop(t);

    // A restart: the data keys are unwrapped by the token again, once per tenant.
    const restarted = await start();
    const read = await request(restarted.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(200);
    expect(read.body.data).toBeUndefined(); // masked by default
    // Paying with it: the card opened with the unwrapped data key, at the sandbox.
    const connection = await newConnection(restarted, key, {
      currencies: ['USD'],
      countries: ['US'],
      wait: false,
    });
    const paid = await request(restarted.http)
      .post('/orchestration/transactions')
      .set('BT-API-KEY', key)
      .send({
        amount: 1299,
        currency: 'USD',
        connection_id: connection.id,
        token: tokenId,
        intent: 'capture',
        payment_source: 'card_on_file',
      });
    expect([201, 202]).toContain(paid.status);
    expect(paid.body.status).toMatch(/capture_succeeded|authorization_succeeded|processing/);
    expect(counted(await metrics(restarted), 'unwrap')).toBeGreaterThanOrEqual(1);
    const logs = restarted.logs.join('\n');
    expect(logs).not.toContain(PIN);
  }, 120_000);

  it('a token that goes away answers 503 key_provider_unavailable (nothing half-written), and is used again when it returns', async () => {
    for (const t of [...apps]) await stop(t);
    const t = await start();
    const tokenize = (apiKey: string, number: string) =>
      request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', apiKey)
        .send({ type: 'card', data: { ...CARD, number } });
    // The first tenant's data key is unwrapped now and cached; the second's is not yet.
    await tokenize(key, '4000056655665556').expect(201);
    const away = `${tokens}-away`;
    const countTokens = async () => {
      const pg = new Client({ connectionString: db.url });
      await pg.connect();
      try {
        return Number((await pg.query('SELECT count(*) AS n FROM tokens')).rows[0].n);
      } finally {
        await pg.end();
      }
    };
    const stored = await countTokens();
    renameSync(tokens, away);
    mkdirSync(tokens);
    try {
      const refused = await tokenize(other.key, '5200828282828210').expect(503);
      expect(refused.body.code).toBe('key_provider_unavailable');
      expect(refused.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(refused.headers['retry-after']).toBe('1');
      expect(await countTokens()).toBe(stored);
      // What was already unwrapped keeps serving.
      await tokenize(key, '4000002500003155').expect(201);
    } finally {
      rmSync(tokens, { recursive: true, force: true });
      renameSync(away, tokens);
    }
    await tokenize(other.key, '5200828282828210').expect(201);
    const text = await metrics(t);
    expect(counted(text, 'failed')).toBeGreaterThanOrEqual(1);
    expect(counted(text, 'opened')).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('rotates between versions without downtime: generate v2, restart, rotate; every token still reads', async () => {
    for (const t of [...apps]) await stop(t);
    const made = await cli(['keys', 'ceremony', '--provider', 'pkcs11']);
    expect(JSON.parse(made.stdout).version).toBe('v2');
    const t = await start();
    const rotated = await cli(['keys', 'rotate']);
    expect(rotated.code).toBe(0);
    expect(JSON.parse(rotated.stdout)).toMatchObject({
      active_version: 'v2',
      rewrapped_tenants: expect.any(Number),
    });
    const status = JSON.parse((await cli(['keys', 'status'])).stdout);
    expect(status.versions.find((v: { version: string }) => v.version === 'v1').wraps).toBe(0);
    expect(status.versions.find((v: { version: string }) => v.version === 'v2')).toMatchObject({
      active: true,
    });
    await stop(t);
    // Restarted: both tenants' data keys are opened by v2 in the token.
    const again = await start();
    const unwrapped = counted(await metrics(again), 'unwrap');
    for (const [apiKey, number] of [
      [key, '4000000000003220'],
      [other.key, '2223003122003222'],
    ])
      await request(again.http)
        .post('/tokens')
        .set('BT-API-KEY', apiKey)
        .send({ type: 'card', data: { ...CARD, number } })
        .expect(201);
    await request(again.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(200);
    // The device's counts are the process's (these servers share one): two more, one per tenant.
    expect(counted(await metrics(again), 'unwrap') - unwrapped).toBe(2);
  }, 120_000);

  it('every key made, rotation and HSM failure is on record in the system log (`vault logs --system`)', async () => {
    const run = await cli(['logs', '--system']);
    expect(run.code).toBe(0);
    const messages = run.stdout.split('\n').map((line) => {
      const row = JSON.parse(line) as { operation: string; message: string; entity_type: string };
      expect(row.entity_type).toBe('key');
      return `${row.operation} ${row.message}`;
    });
    expect(
      messages.filter((m) =>
        /^create Key-encrypting key v\d made in the HSM \(pkcs11, KCV [0-9A-F]{6}\)$/.test(m),
      ),
    ).toHaveLength(2);
    expect(
      messages.some((m) => /^refuse The HSM did not answer \(KEY_PROVIDER=pkcs11: CKR_\w+\)/.test(m)),
    ).toBe(true);
    expect(messages).toContain('use The HSM answers again (KEY_PROVIDER=pkcs11)');
    expect(messages).toContain('update Key rotation to v2 started');
    expect(
      messages.some((m) =>
        /^update Key rotation to v2 finished: \d+ tenant keys and \d+ signing keys re-wrapped$/.test(m),
      ),
    ).toBe(true);
    expect(run.stdout).not.toContain(PIN);
  });

  it('leaves no PIN, KEK or unwrapped data key in the database, the logs or an answer', async () => {
    const all = [...apps];
    const logs = all.flatMap((t) => t.logs).join('\n');
    const dump = execFileSync('pg_dump', ['--data-only', `${ADMIN_URL.replace(/\/[^/]*$/, '')}/${db.name}`], {
      maxBuffer: 256 * 1024 * 1024,
    }).toString();
    // The data keys as the token opens them (the test may ask it; the vault keeps them in memory only).
    const device = Pkcs11Device.of({
      module: SOFTHSM_MODULE,
      tokenLabel: 'vault-e2e',
      pin: PIN,
      keyLabel: 'vault-kek',
    });
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    let dataKeys: Buffer[];
    try {
      const { rows } = await pg.query<{ id: string; key_version: string; wrapped_key: Buffer }>(
        'SELECT id, key_version, wrapped_key FROM tenants WHERE wrapped_key IS NOT NULL',
      );
      dataKeys = rows.map((row) =>
        device.key(row.key_version).unwrap(row.wrapped_key, `tenant-key:${row.id}`),
      );
    } finally {
      await pg.end();
    }
    expect(dataKeys.length).toBeGreaterThanOrEqual(2);
    const secrets = [PIN, ...dataKeys.flatMap((k) => [k.toString('base64'), k.toString('hex')])];
    for (const secret of secrets) {
      expect(dump).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
  });
});

describe('a change of provider: vault keys rotate --to pkcs11, every server stopped', () => {
  it('moves every tenant key under a new key made in the HSM; the servers then start under pkcs11 and pay with old tokens', async () => {
    const moved = await createDatabase('vault_test_to_pkcs11');
    const apps: TestApp[] = [];
    try {
      initToken('vault-move', PIN);
      const envKeys = `v1:${randomBytes(32).toString('base64')}`;
      const asEnv = {
        DATABASE_URL: moved.url,
        KEY_PROVIDER: 'env',
        ENCRYPTION_KEYS: envKeys,
        JOBS_ENABLED: 'false',
      };
      const hsm = {
        PKCS11_MODULE: SOFTHSM_MODULE,
        PKCS11_TOKEN_LABEL: 'vault-move',
        PKCS11_PIN: PIN,
      };
      const before = await startApp(asEnv);
      apps.push(before);
      const tenant = await newTenant(before, 'moving');
      const key = (
        await newApplication(before, tenant.managementKey, {
          type: 'private',
          permissions: ORCHESTRATION_PERMISSIONS,
        })
      ).key;
      const made = await request(before.http)
        .post('/tokens')
        .set('BT-API-KEY', key)
        .send({ type: 'card', data: CARD })
        .expect(201);
      await before.close();
      apps.pop();

      const run = spawnJs('bin/vault.js', ['keys', 'rotate', '--to', 'pkcs11'], {
        LOG_LEVEL: 'warn',
        ...asEnv,
        ...hsm,
      });
      expect(await run.exited).toBe(0);
      const changed = JSON.parse(run.stdout().trim());
      expect(changed).toMatchObject({
        from: 'env',
        to: 'pkcs11',
        active_version: 'v2',
        rewrapped_tenants: 1,
        check: expect.stringMatching(/^[0-9A-F]{6}$/),
      });
      expect(run.stderr()).toMatch(/Keys moved from env to pkcs11: 1 tenant keys under v2/);
      expect(`${run.stdout()}${run.stderr()}`).not.toContain(PIN);

      // The environment's key is no longer needed: the server starts on the HSM alone.
      const after = await startApp({
        DATABASE_URL: moved.url,
        KEY_PROVIDER: 'pkcs11',
        ENCRYPTION_KEYS: '',
        JOBS_ENABLED: 'false',
        ...hsm,
      });
      apps.push(after);
      const connection = await newConnection(after, key, {
        currencies: ['USD'],
        countries: ['US'],
        wait: false,
      });
      const paid = await request(after.http).post('/orchestration/transactions').set('BT-API-KEY', key).send({
        amount: 500,
        currency: 'USD',
        connection_id: connection.id,
        token: made.body.id,
        intent: 'capture',
        payment_source: 'card_on_file',
      });
      expect([201, 202]).toContain(paid.status);
      const status = spawnJs('bin/vault.js', ['keys', 'status'], {
        LOG_LEVEL: 'warn',
        DATABASE_URL: moved.url,
        KEY_PROVIDER: 'pkcs11',
        ENCRYPTION_KEYS: '',
        ...hsm,
      });
      await status.exited;
      expect(JSON.parse(status.stdout()).versions).toEqual([
        { version: 'v1', provider: 'env', active: false, wraps: 0 },
        { version: 'v2', provider: 'pkcs11', active: true, wraps: 1 },
      ]);
    } finally {
      for (const t of apps) await t.close();
      await dropDatabase(moved.name);
    }
  }, 120_000);
});
