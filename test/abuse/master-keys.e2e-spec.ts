import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { newApplication, newTenant, startApp } from '../support/app';
import { spawnJs } from '../support/processes';
import { createDatabase, dropDatabase } from '../support/test-database';

const masterKey = (version: string) => `${version}:${randomBytes(32).toString('base64')}`;

/**
 * Abuse class: master keys (docs/reliability.md). With DATABASE_URL set no key file is ever generated:
 * the server and the CLI stop with a message naming ENCRYPTION_KEYS. The database records a check
 * value per master key version, so a process whose keys do not match stops at start, naming the
 * versions, instead of creating tenants that other instances cannot open or answering 500 later.
 */
describe('abuse: master keys', () => {
  let db: { name: string; url: string };
  let dataDir: string;

  beforeAll(async () => {
    db = await createDatabase('vault_test_masterkeys');
  });
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'vault-keys-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));
  afterAll(() => dropDatabase(db.name));

  it('the server with DATABASE_URL and no ENCRYPTION_KEYS refuses to start and writes no key file', async () => {
    await expect(startApp({ DATABASE_URL: db.url, ENCRYPTION_KEYS: '', DATA_DIR: dataDir })).rejects.toThrow(
      /ENCRYPTION_KEYS/,
    );
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('the CLI with DATABASE_URL and no ENCRYPTION_KEYS stops, names ENCRYPTION_KEYS, creates no tenant and no key file', async () => {
    const cli = spawnJs('dist/cli.js', ['tenant', 'create', '--name', 'lost'], {
      DATABASE_URL: db.url,
      ENCRYPTION_KEYS: '',
      DATA_DIR: dataDir,
    });
    expect(await cli.exited).not.toBe(0);
    expect(cli.stderr()).toMatch(/ENCRYPTION_KEYS/);
    expect(cli.stdout()).not.toMatch(/key_mgt_/);
    expect(existsSync(join(dataDir, 'master-keys'))).toBe(false);
  }, 90_000);

  it('a server or CLI whose key does not match the recorded check value stops at start, naming the version', async () => {
    const own = await createDatabase('vault_test_masterkeys_mismatch');
    try {
      const right = masterKey('v1');
      const t = await startApp({ DATABASE_URL: own.url, ENCRYPTION_KEYS: right });
      const tenant = await newTenant(t);
      const key = (
        await newApplication(t, tenant.managementKey, { type: 'private', permissions: ['token:create'] })
      ).key;
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({ type: 'token', data: 'x' })
        .expect(201);
      await t.close();

      const wrong = masterKey('v1');
      await expect(startApp({ DATABASE_URL: own.url, ENCRYPTION_KEYS: wrong })).rejects.toThrow(
        /master key.*v1|v1.*master key/i,
      );
      const cli = spawnJs('dist/cli.js', ['tenant', 'create', '--name', 'mismatch'], {
        DATABASE_URL: own.url,
        ENCRYPTION_KEYS: wrong,
      });
      expect(await cli.exited).not.toBe(0);
      expect(cli.stderr()).toMatch(/v1/);
      expect(cli.stdout()).not.toMatch(/key_mgt_/);

      // Tenants wrapped under a version the process lacks: stop at start (not a 500 on the first tokenize).
      await expect(startApp({ DATABASE_URL: own.url, ENCRYPTION_KEYS: masterKey('v2') })).rejects.toThrow(
        /v1/,
      );

      // The right key still starts and serves.
      const again = await startApp({ DATABASE_URL: own.url, ENCRYPTION_KEYS: right });
      await request(again.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({ type: 'token', data: 'y' })
        .expect(201);
      await again.close();
    } finally {
      await dropDatabase(own.name);
    }
  }, 120_000);
});
