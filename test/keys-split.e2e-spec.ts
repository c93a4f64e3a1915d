import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { combine } from 'shamir-secret-sharing';
import { parseShare, shareLine } from '../src/common/crypto/shares';
import { newTenant, startApp, tenantWithCard, TestApp } from './support/app';
import { spawnJs } from './support/processes';
import { ADMIN_URL, createDatabase, dropDatabase } from './support/test-database';

/** KEY_PROVIDER=split as its operator and custodians meet it, with `vault` as they run it. */
const SPLIT = { KEY_PROVIDER: 'split', ENCRYPTION_KEYS: '', JOBS_ENABLED: 'false' };

const cli = async (env: Record<string, string>, args: string[], input?: string) => {
  const run = spawnJs('bin/vault.js', args, { LOG_LEVEL: 'warn', ...SPLIT, ...env }, input);
  const code = await run.exited;
  return { code, stdout: run.stdout().trim(), stderr: run.stderr().trim() };
};

/** A share with one payload byte changed and its digest made again: well-formed, but not a share of the key. */
function forged(line: string): string {
  const share = parseShare(line);
  if (share === 'corrupted') throw new Error('not a share');
  const payload = Buffer.from(share.payload);
  payload[0] ^= 0xff;
  return shareLine({ ...share, payload });
}

/** The same line with one character of its payload changed: its digest no longer holds. */
function damaged(line: string): string {
  const fields = line.split(':');
  fields[4] = (fields[4][0] === 'A' ? 'B' : 'A') + fields[4].slice(1);
  return fields.join(':');
}

describe('keys under custody: KEY_PROVIDER=split', () => {
  let db: { name: string; url: string };
  let other: { name: string; url: string };
  let shares: string[];
  let foreign: string[];
  const apps: TestApp[] = [];
  const start = async () => {
    const t = await startApp({ DATABASE_URL: db.url, ...SPLIT });
    apps.push(t);
    return t;
  };
  const stop = async (t: TestApp) => {
    apps.splice(apps.indexOf(t), 1);
    await t.close();
  };
  const enter = (t: TestApp, share: string) => request(t.http).post('/sys/unseal').send({ share });

  beforeAll(async () => {
    [db, other] = await Promise.all([
      createDatabase('vault_test_split'),
      createDatabase('vault_test_split2'),
    ]);
    const made = await cli({ DATABASE_URL: db.url }, [
      'keys',
      'ceremony',
      '--shares',
      '3',
      '--threshold',
      '2',
    ]);
    expect(made.code).toBe(0);
    shares = made.stdout.split('\n');
    expect(made.stderr).toMatch(/Key v1 \(check [0-9a-f]{16}\) split into 3 shares; any 2 open it/);
    const elsewhere = await cli({ DATABASE_URL: other.url }, [
      'keys',
      'ceremony',
      '--shares',
      '2',
      '--threshold',
      '2',
    ]);
    foreign = elsewhere.stdout.split('\n');
  }, 240_000);

  afterAll(async () => {
    for (const t of [...apps]) await t.close();
    await Promise.all([dropDatabase(db.name), dropDatabase(other.name)]);
  });

  it('the ceremony prints one share line per custodian, labelled by key version, check and index; nothing else on stdout', () => {
    expect(shares).toHaveLength(3);
    shares.forEach((line, i) =>
      expect(line).toMatch(
        new RegExp(`^vault-share-v1:v1:[0-9a-f]{16}:${i + 1}:[A-Za-z0-9+/]{44}:[0-9a-f]{8}$`),
      ),
    );
    expect(foreign[0].split(':')[2]).not.toBe(shares[0].split(':')[2]);
  });

  it('refuses bounds it cannot keep (2 <= threshold <= shares <= 16), recording nothing', async () => {
    for (const [n, m] of [
      ['3', '4'],
      ['17', '2'],
      ['3', '1'],
    ]) {
      const run = await cli({ DATABASE_URL: db.url }, ['keys', 'ceremony', '--shares', n, '--threshold', m]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/threshold|shares/);
      expect(run.stdout).toBe('');
    }
  }, 60_000);

  it('a server with no ceremony recorded stops at start, naming what to run', async () => {
    const empty = await createDatabase('vault_test_split3');
    try {
      await expect(startApp({ DATABASE_URL: empty.url, ...SPLIT })).rejects.toThrow(
        /KEY_PROVIDER=split: no key ceremony is recorded for this database; run `vault keys ceremony/,
      );
    } finally {
      await dropDatabase(empty.name);
    }
  });

  it('starts sealed: live answers, everything else 503 sealed; shares are counted, refused by name, then it serves', async () => {
    const t = await start();
    await request(t.http).get('/health/live').expect(200);
    const ready = await request(t.http).get('/health/ready').expect(503);
    expect(ready.body.code).toBe('sealed');
    expect(ready.headers['content-type']).toMatch(/application\/problem\+json/);
    const tokens = await request(t.http).get('/tokens').set('BT-API-KEY', 'key_anything').expect(503);
    expect(tokens.body.code).toBe('sealed');
    expect((await request(t.http).get('/sys/seal-status').expect(200)).body).toEqual({
      sealed: true,
      progress: 0,
      threshold: 2,
      kek_version: 'v1',
    });

    // Refused by name, not counted.
    expect((await enter(t, damaged(shares[0])).expect(422)).body.code).toBe('share_corrupted');
    expect((await enter(t, 'not a share').expect(422)).body.code).toBe('share_corrupted');
    expect((await enter(t, foreign[0]).expect(422)).body.code).toBe('share_of_another_key');
    expect((await enter(t, shares[0]).expect(200)).body).toMatchObject({ sealed: true, progress: 1 });
    expect((await enter(t, shares[0]).expect(422)).body.code).toBe('share_already_entered');
    await request(t.http).get('/tokens').expect(503);

    // A well-formed share of nothing: the pair does not open the key, and both are forgotten.
    const wrong = await enter(t, forged(shares[1])).expect(422);
    expect(wrong.body.code).toBe('shares_do_not_open_key');
    expect((await request(t.http).get('/sys/seal-status')).body).toMatchObject({ sealed: true, progress: 0 });

    // `vault unseal` as a custodian runs it: one share on standard input.
    await new Promise<void>((resolve) => t.app.getHttpServer().listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    const first = await cli({}, ['unseal', '--url', url], `${shares[2]}\n`);
    expect(first).toMatchObject({ code: 0, stdout: '1 of 2' });
    const again = await cli({}, ['unseal', '--url', url], shares[2]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^refused: already entered\./);
    const reset = await cli({}, ['unseal', '--url', url, '--reset']);
    expect(reset).toMatchObject({ code: 0, stdout: '0 of 2' });
    expect(await cli({}, ['unseal', '--url', url], shares[2])).toMatchObject({ code: 0, stdout: '1 of 2' });
    expect(await cli({}, ['unseal', '--url', url], shares[0])).toMatchObject({ code: 0, stdout: 'unsealed' });

    await request(t.http).get('/health/ready').expect(200);
    expect((await request(t.http).get('/sys/seal-status')).body).toEqual({
      sealed: false,
      progress: 0,
      threshold: 2,
      kek_version: 'v1',
    });
  }, 120_000);

  it('tokenizes and reads once unsealed; a second instance is sealed on its own; a restart is sealed again and reads what was written', async () => {
    const [a] = apps;
    const { key, tokenId } = await tenantWithCard(a, 'split');

    const b = await start();
    await request(b.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(503);
    await enter(b, shares[1]).expect(200);
    expect((await enter(b, shares[2]).expect(200)).body.sealed).toBe(false);
    await request(b.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(200);

    await stop(a);
    const restarted = await start();
    await request(restarted.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(503);
    await enter(restarted, shares[0]).expect(200);
    await enter(restarted, shares[2]).expect(200);
    const read = await request(restarted.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(200);
    expect(read.body.data).toBeUndefined();
    expect(read.body.enrichments.card_details.last4).toBe('4242');

    // What the operator sees, without any share: the key, who holds it, the tenant key it wraps.
    const status = await cli({ DATABASE_URL: db.url }, ['keys', 'status']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual({
      provider: 'split',
      versions: [{ version: 'v1', provider: 'split', active: true, wraps: 1, threshold: 2, shares: 3 }],
      rotation: null,
      data_keys: { rotation: null },
    });
  }, 120_000);

  it('at most 10 shares a minute from one address', async () => {
    const t = await start();
    for (let i = 0; i < 10; i++) await enter(t, 'not a share').expect(422);
    const limited = await enter(t, shares[0]).expect(429);
    expect(limited.body.code).toBe('too_many_unseal_attempts');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await request(t.http).get('/sys/seal-status')).body.progress).toBe(0);
  });

  it('every ceremony, share entered and unseal is on record in the system log (`vault logs --system`), by index, never by value', async () => {
    const run = await cli({ DATABASE_URL: db.url }, ['logs', '--system']);
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n').map((line) => JSON.parse(line));
    const messages = lines.map((line) => `${line.operation} ${line.message}`);
    expect(lines.every((line) => line.entity_type === 'key' && line.actor_type === 'system')).toBe(true);
    expect(lines.every((line) => line.tenant_id === '00000000-0000-4000-8000-000000000000')).toBe(true);
    expect(messages[0]).toMatch(
      /^create Key-encrypting key v1 made by a ceremony, split into 3 shares of which 2 open it/,
    );
    expect(messages).toContain('refuse A share entered at unseal was refused: corrupted');
    expect(messages).toContain('refuse Share 1 entered at unseal was refused: a share of another key (v1)');
    expect(messages).toContain('refuse Share 1 entered at unseal was refused: entered already');
    expect(messages).toContain('use Unseal: share 1 of key v1 entered (1 of 2)');
    expect(messages.some((m) => /^refuse Unseal: shares \d, \d did not open key v1/.test(m))).toBe(true);
    expect(messages.some((m) => /^use Unsealed: key v1 opened by shares \d, \d$/.test(m))).toBe(true);
    expect(messages).toContain('update Unseal reset: 1 share(s) entered forgotten');
    for (const share of shares) expect(run.stdout).not.toContain(share.split(':')[4]);
    // No request reads it: a tenant's key sees its own log only.
    const [t] = apps;
    const tenant = await newTenant(t, 'reader');
    const logs = await request(t.http).get('/logs').set('BT-API-KEY', tenant.managementKey).expect(200);
    expect(JSON.stringify(logs.body)).not.toContain('Key-encrypting key');
  });

  it('no share, and not the key they open, in the database or a log line', async () => {
    const key = Buffer.from(
      await combine(
        shares.slice(0, 2).map((l) => new Uint8Array((parseShare(l) as { payload: Buffer }).payload)),
      ),
    );
    const dump = execFileSync('pg_dump', ['--data-only', `${ADMIN_URL.replace(/\/[^/]*$/, '')}/${db.name}`], {
      maxBuffer: 256 * 1024 * 1024,
    }).toString();
    const logs = apps.flatMap((t) => t.logs).join('\n');
    const secrets = [
      ...shares.map((l) => l.split(':')[4]),
      key.toString('base64'),
      key.toString('hex'),
      // As bytea text would show it.
      `\\x${key.toString('hex')}`,
    ];
    for (const secret of secrets) {
      expect(dump).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
  });
});

describe('a change of provider: vault keys rotate --to split, every server stopped', () => {
  it('writes the shares first, moves every tenant key under the split key; the server then starts sealed, unseals and reads', async () => {
    const moved = await createDatabase('vault_test_to_split');
    const out = mkdtempSync(join(tmpdir(), 'vault-shares-'));
    const apps: TestApp[] = [];
    try {
      const envKeys = `v1:${randomBytes(32).toString('base64')}`;
      const asEnv = {
        DATABASE_URL: moved.url,
        KEY_PROVIDER: 'env',
        ENCRYPTION_KEYS: envKeys,
        JOBS_ENABLED: 'false',
      };
      const before = await startApp(asEnv);
      apps.push(before);
      const { key, tokenId } = await tenantWithCard(before, 'moving');
      await before.close();
      apps.pop();

      const bad = await cli(asEnv, ['keys', 'rotate', '--to', 'split', '--shares', '3', '--threshold', '2']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/--shares, --threshold and --out are required/);

      const dir = join(out, 'custodians');
      const run = await cli(asEnv, [
        'keys',
        'rotate',
        '--to',
        'split',
        '--shares',
        '3',
        '--threshold',
        '2',
        '--out',
        dir,
      ]);
      expect(run.code).toBe(0);
      const changed = JSON.parse(run.stdout);
      expect(changed).toMatchObject({ from: 'env', to: 'split', active_version: 'v2', rewrapped_tenants: 1 });
      expect(changed.share_files).toEqual([1, 2, 3].map((i) => join(dir, `share-${i}.txt`)));
      const lines = changed.share_files.map((file: string) => readFileSync(file, 'utf8').trim());
      for (const file of changed.share_files) expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(lines[0]).toMatch(/^vault-share-v1:v2:[0-9a-f]{16}:1:/);

      const after = await startApp({ DATABASE_URL: moved.url, ...SPLIT });
      apps.push(after);
      await request(after.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(503);
      await request(after.http).post('/sys/unseal').send({ share: lines[2] }).expect(200);
      await request(after.http).post('/sys/unseal').send({ share: lines[0] }).expect(200);
      await request(after.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(200);
      await request(after.http)
        .post('/tokens')
        .set('BT-API-KEY', key)
        .send({
          type: 'card',
          data: { number: '5555555555554444', expiration_month: 1, expiration_year: 2032 },
        })
        .expect(201);
    } finally {
      for (const t of apps) await t.close();
      rmSync(out, { recursive: true, force: true });
      await dropDatabase(moved.name);
    }
  }, 120_000);
});
