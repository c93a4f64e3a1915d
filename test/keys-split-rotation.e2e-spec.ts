import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { combine } from 'shamir-secret-sharing';
import { parseShare, shareLine } from '../src/common/crypto/shares';
import { newTenant, startApp, tenantWithCard, TestApp } from './support/app';
import { spawnJs } from './support/processes';
import { initToken, SOFTHSM_MODULE } from './support/softhsm';
import { ADMIN_URL, createDatabase, dropDatabase } from './support/test-database';

/** KEY_PROVIDER=split as its operator and custodians meet it, with `vault` as they run it. */
const SPLIT = { KEY_PROVIDER: 'split', ENCRYPTION_KEYS: '', JOBS_ENABLED: 'false' };

/** Everything the CLI printed in this file, scanned for secrets at the end. */
const printed: string[] = [];
const cli = async (env: Record<string, string>, args: string[], input?: string) => {
  const run = spawnJs('bin/vault.js', args, { LOG_LEVEL: 'warn', ...SPLIT, ...env }, input);
  const code = await run.exited;
  printed.push(run.stdout(), run.stderr());
  return { code, stdout: run.stdout().trim(), stderr: run.stderr().trim() };
};
const lines = (...shares: string[]) => shares.map((s) => `${s}\n`).join('');
const payload = (line: string) => (parseShare(line) as { payload: Buffer }).payload;
/** The key two shares open, as the test alone may compute it. */
const keyOf = async (a: string, b: string) =>
  Buffer.from(await combine([new Uint8Array(payload(a)), new Uint8Array(payload(b))]));
/** The same share relabelled for a key of another check value: well-formed, of another key. */
const ofAnotherKey = (line: string) =>
  shareLine({
    ...(parseShare(line) as Exclude<ReturnType<typeof parseShare>, 'corrupted'>),
    check: 'f'.repeat(16),
  });

describe('KEY_PROVIDER=split: the CLI reads shares, and the KEK rotates online', () => {
  let db: { name: string; url: string };
  let dir: string;
  let v1: string[];
  let v2: string[];
  let envKey: string;
  const apps: TestApp[] = [];
  const start = async (env: Record<string, string> = SPLIT) => {
    const t = await startApp({ DATABASE_URL: db.url, ...env });
    apps.push(t);
    return t;
  };
  const stop = async (t: TestApp) => {
    apps.splice(apps.indexOf(t), 1);
    await t.close();
  };
  const enter = (t: TestApp, share: string) => request(t.http).post('/sys/unseal').send({ share });
  const status = async (t: TestApp) => (await request(t.http).get('/sys/seal-status').expect(200)).body;
  const local = (args: string[], input?: string) => cli({ DATABASE_URL: db.url }, args, input);
  let token: { id: string; key: string };

  beforeAll(async () => {
    db = await createDatabase('vault_test_split_rotation');
    dir = mkdtempSync(join(tmpdir(), 'vault-split-rotation-'));
    const made = await local(['keys', 'ceremony', '--shares', '3', '--threshold', '2']);
    expect(made.code).toBe(0);
    v1 = made.stdout.split('\n');
  }, 240_000);

  afterAll(async () => {
    for (const t of [...apps]) await t.close();
    rmSync(dir, { recursive: true, force: true });
    await dropDatabase(db.name);
  });

  it('vault tenant create reads the shares from --shares-from DIR or standard input; too few, or of another key, is refused by name', async () => {
    const custodians = join(dir, 'v1');
    mkdirSync(custodians);
    writeFileSync(join(custodians, 'share-1.txt'), `${v1[0]}\n`);
    writeFileSync(join(custodians, 'share-3.txt'), `${v1[2]}\n`);
    writeFileSync(join(custodians, 'notes.md'), 'not a share\n');
    const fromDir = await local(['tenant', 'create', '--name', 'from-dir', '--shares-from', custodians]);
    expect(fromDir.code).toBe(0);
    expect(JSON.parse(fromDir.stdout).tenant_id).toMatch(/^[0-9a-f-]{36}$/);

    const fromStdin = await local(
      ['tenant', 'create', '--name', 'from-stdin'],
      lines(ofAnotherKey(v1[1]), v1[1], v1[1], v1[0], v1[2]),
    );
    expect(fromStdin.code).toBe(0);
    expect(fromStdin.stderr).toMatch(/standard input: share refused: another key\./);
    expect(fromStdin.stderr).toMatch(/standard input: share refused: already entered\./);
    expect(JSON.parse(fromStdin.stdout).tenant_id).toMatch(/^[0-9a-f-]{36}$/);

    const few = await local(['tenant', 'create', '--name', 'few'], lines(v1[0], 'vault-share-v1:v1:damaged'));
    expect(few.code).toBe(1);
    expect(few.stderr).toMatch(/share refused: corrupted\./);
    expect(few.stderr).toMatch(
      /KEY_PROVIDER=split: not enough shares to open key v1 \(1 counted, 2 needed\).*Nothing was changed\.$/,
    );
    expect(few.stdout).toBe('');
    const none = await local(['tenant', 'create', '--name', 'none']);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/not enough shares to open key v1 \(0 counted, 2 needed\)/);

    const status = JSON.parse((await local(['keys', 'status'])).stdout);
    expect(status.versions).toEqual([
      { version: 'v1', provider: 'split', active: true, wraps: 2, threshold: 2, shares: 3 },
    ]);
  }, 120_000);

  it('a newer ceremony, its shares entered into the running server: adopted online; old tokens read; `vault keys rotate` with both keys; a restart then needs v2 only', async () => {
    const a = await start();
    await enter(a, v1[0]).expect(200);
    expect((await enter(a, v1[1]).expect(200)).body).toMatchObject({ sealed: false, kek_version: 'v1' });
    const { key, tokenId } = await tenantWithCard(a, 'before');
    token = { id: tokenId, key };

    const ceremony = await local(['keys', 'ceremony', '--shares', '3', '--threshold', '2']);
    expect({ code: ceremony.code, stderr: ceremony.stderr }).toMatchObject({ code: 0 });
    v2 = ceremony.stdout.split('\n');
    expect(v2[0]).toMatch(/^vault-share-v1:v2:/);
    expect(await status(a)).toEqual({
      sealed: false,
      progress: 0,
      threshold: 2,
      kek_version: 'v1',
      adopting: 'v2',
    });

    // `vault unseal` as a custodian runs it, against the running server.
    await new Promise<void>((resolve) => a.app.getHttpServer().listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(a.app.getHttpServer().address() as AddressInfo).port}`;
    const first = await cli({}, ['unseal', '--url', url], v2[2]);
    expect(first).toMatchObject({ code: 0, stdout: '1 of 2' });
    expect(first.stderr).toMatch(/Shares of key v2, made after v1/);
    expect((await enter(a, v1[2]).expect(422)).body.code).toBe('share_of_another_key');
    const second = await cli({}, ['unseal', '--url', url], v2[0]);
    expect(second).toMatchObject({ code: 0, stdout: 'unsealed' });
    expect(second.stderr).toMatch(/serves under key v2/);
    expect(await status(a)).toEqual({ sealed: false, progress: 0, threshold: 2, kek_version: 'v2' });
    await request(a.http).get(`/tokens/${token.id}`).set('BT-API-KEY', key).expect(200);
    await newTenant(a, 'after'); // its data key wrapped under v2

    // A server started before the rotation finished needs both keys, one after the other.
    const b = await start();
    expect(await status(b)).toEqual({ sealed: true, progress: 0, threshold: 2, kek_version: 'v1' });
    await enter(b, v1[0]).expect(200);
    expect((await enter(b, v1[1]).expect(200)).body).toEqual({
      sealed: true,
      progress: 0,
      threshold: 2,
      kek_version: 'v2',
    });
    await enter(b, v2[1]).expect(200);
    expect((await enter(b, v2[2]).expect(200)).body).toMatchObject({ sealed: false, kek_version: 'v2' });
    await request(b.http).get(`/tokens/${token.id}`).set('BT-API-KEY', key).expect(200);

    let keys = JSON.parse((await local(['keys', 'status'])).stdout);
    expect(keys.rotation).toEqual({ done: 1, total: 4 });

    const onlyNew = await local(['keys', 'rotate'], lines(v2[0], v2[1]));
    expect(onlyNew.code).toBe(1);
    expect(onlyNew.stderr).toMatch(/not enough shares to open key v1 \(0 counted, 2 needed\)/);
    const rotated = await local(['keys', 'rotate'], lines(v1[1], v2[0], v1[2], v2[2]));
    expect(rotated.code).toBe(0);
    expect(JSON.parse(rotated.stdout)).toEqual({ active_version: 'v2', rewrapped_tenants: 3 });
    keys = JSON.parse((await local(['keys', 'status'])).stdout);
    expect(keys.rotation).toBeNull();
    expect(keys.versions.map((v: { version: string; wraps: number }) => [v.version, v.wraps])).toEqual([
      ['v1', 0],
      ['v2', 4],
    ]);
    await request(a.http).get(`/tokens/${token.id}`).set('BT-API-KEY', key).expect(200);

    // Restarted: sealed under v2 alone.
    await stop(a);
    await stop(b);
    const c = await start();
    expect(await status(c)).toEqual({ sealed: true, progress: 0, threshold: 2, kek_version: 'v2' });
    expect((await enter(c, v1[0]).expect(422)).body.code).toBe('share_of_another_key');
    await enter(c, v2[0]).expect(200);
    await enter(c, v2[1]).expect(200);
    await request(c.http).get(`/tokens/${token.id}`).set('BT-API-KEY', key).expect(200);

    const system = (await local(['logs', '--system'])).stdout;
    expect(system).toMatch(/Adopted: key v2 opened by shares 1, 3; new data keys are wrapped under it/);
    expect(system).toMatch(/Unseal: key v1 opened by shares 1, 2; key v2 still to open/);
    expect(system).toMatch(/CLI \(pid \d+, keys\.rotate\): key v1 by shares 2, 3; key v2 by shares 1, 3/);
    await stop(c);
  }, 240_000);

  it('vault logs verify under split reads the shares (--shares-from)', async () => {
    const custodians = join(dir, 'v2');
    mkdirSync(custodians);
    v2.forEach((line, i) => writeFileSync(join(custodians, `share-${i + 1}.txt`), `${line}\n`));
    const verified = await local(['logs', 'verify', '--shares-from', custodians]);
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout).problems).toEqual([]);
  }, 120_000);

  it('vault keys rotate --tenant-keys under split reads the shares from standard input; the tokens then read under the new data key', async () => {
    const rotated = await local(['keys', 'rotate', '--tenant-keys'], `${v2[1]}\n${v2[2]}\n`);
    expect(rotated.code).toBe(0);
    expect(JSON.parse(rotated.stdout)).toMatchObject({ resumed: false, tokens: expect.any(Number) });
    const t = await start();
    await enter(t, v2[0]).expect(200);
    await enter(t, v2[2]).expect(200);
    await request(t.http).get(`/tokens/${token.id}`).set('BT-API-KEY', token.key).expect(200);
    await stop(t);
  }, 120_000);

  it('vault keys rotate --to env --out FILE, from split: the key written first (0600), the server then starts under env and reads', async () => {
    const out = join(dir, 'encryption-keys');
    const noOut = await local(['keys', 'rotate', '--to', 'env'], lines(v2[0], v2[1]));
    expect(noOut.code).toBe(1);
    expect(noOut.stderr).toMatch(/--out FILE is required/);
    const moved = await local(['keys', 'rotate', '--to', 'env', '--out', out], lines(v2[1], v2[2]));
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout)).toMatchObject({
      from: 'split',
      to: 'env',
      active_version: 'v3',
      rewrapped_tenants: 4,
    });
    expect(statSync(out).mode & 0o777).toBe(0o600);
    envKey = readFileSync(out, 'utf8').trim();
    expect(envKey).toMatch(/^v3:[A-Za-z0-9+/]{43}=$/);
    const again = await local(['keys', 'rotate', '--to', 'env', '--out', out], lines(v2[1], v2[2]));
    expect(again.code).toBe(1);

    const t = await start({ KEY_PROVIDER: 'env', ENCRYPTION_KEYS: envKey, JOBS_ENABLED: 'false' });
    await request(t.http).get(`/tokens/${token.id}`).set('BT-API-KEY', token.key).expect(200);
    const keys = JSON.parse(
      (await cli({ DATABASE_URL: db.url, KEY_PROVIDER: 'env', ENCRYPTION_KEYS: envKey }, ['keys', 'status']))
        .stdout,
    );
    expect(keys.versions.at(-1)).toEqual({ version: 'v3', provider: 'env', active: true, wraps: 4 });
    await stop(t);
  }, 120_000);

  it('no share, no KEK, no env key in the database, a log line or what the CLI printed', async () => {
    const dump = execFileSync('pg_dump', ['--data-only', `${ADMIN_URL.replace(/\/[^/]*$/, '')}/${db.name}`], {
      maxBuffer: 256 * 1024 * 1024,
    }).toString();
    const logs = apps.flatMap((t) => t.logs).join('\n');
    const output = printed.join('\n');
    const keys = [await keyOf(v1[0], v1[1]), await keyOf(v2[0], v2[1])];
    const env = Buffer.from(envKey.split(':')[1], 'base64');
    const secrets = [
      ...[...v1, ...v2].map((l) => l.split(':')[4]),
      ...[...keys, env].flatMap((k) => [k.toString('base64'), k.toString('hex'), `\\x${k.toString('hex')}`]),
    ];
    for (const secret of secrets) {
      expect(dump).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
    // The ceremonies print their shares on stdout; nothing else does.
    const withoutCeremonies = output.split(v1.join('\n')).join('').split(v2.join('\n')).join('');
    for (const secret of secrets) expect(withoutCeremonies).not.toContain(secret);
  });
});

describe('a change of provider away from split: vault keys rotate --to pkcs11, every server stopped', () => {
  it("reads the split key's shares first, makes the key in the token, re-wraps; the server then starts under pkcs11 and reads", async () => {
    const moved = await createDatabase('vault_test_split_to_pkcs11');
    const dir = mkdtempSync(join(tmpdir(), 'vault-split-to-pkcs11-'));
    const pin = '3141-5926';
    initToken('vault-from-split', pin);
    const hsm = { PKCS11_MODULE: SOFTHSM_MODULE, PKCS11_TOKEN_LABEL: 'vault-from-split', PKCS11_PIN: pin };
    const apps: TestApp[] = [];
    try {
      const made = await cli({ DATABASE_URL: moved.url }, [
        'keys',
        'ceremony',
        '--shares',
        '2',
        '--threshold',
        '2',
      ]);
      const shares = made.stdout.split('\n');
      const before = await startApp({ DATABASE_URL: moved.url, ...SPLIT });
      apps.push(before);
      for (const share of shares) await request(before.http).post('/sys/unseal').send({ share }).expect(200);
      const { key, tokenId } = await tenantWithCard(before, 'moving');
      await before.close();
      apps.pop();

      const env = { DATABASE_URL: moved.url, ...hsm };
      const sealed = await cli(env, ['keys', 'rotate', '--to', 'pkcs11'], lines(shares[0]));
      expect(sealed.code).toBe(1);
      expect(sealed.stderr).toMatch(/not enough shares to open key v1 \(1 counted, 2 needed\)/);
      shares.forEach((line, i) => writeFileSync(join(dir, `share-${i + 1}.txt`), `${line}\n`));
      const run = await cli(env, ['keys', 'rotate', '--to', 'pkcs11', '--shares-from', dir]);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({
        from: 'split',
        to: 'pkcs11',
        active_version: 'v2',
        rewrapped_tenants: 1,
        check: expect.stringMatching(/^[0-9A-F]{6}$/),
      });
      expect(`${run.stdout}${run.stderr}`).not.toContain(pin);

      const after = await startApp({
        ...env,
        KEY_PROVIDER: 'pkcs11',
        ENCRYPTION_KEYS: '',
        JOBS_ENABLED: 'false',
      });
      apps.push(after);
      await request(after.http).get(`/tokens/${tokenId}`).set('BT-API-KEY', key).expect(200);
      const logs = after.logs.join('\n');
      for (const share of shares) expect(logs).not.toContain(share.split(':')[4]);
    } finally {
      for (const t of apps) await t.close();
      rmSync(dir, { recursive: true, force: true });
      await dropDatabase(moved.name);
    }
  }, 180_000);
});
