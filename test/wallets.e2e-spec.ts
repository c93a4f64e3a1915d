import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { TenantKeysService } from '../src/common/crypto/tenant-keys.service';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { authorizedSession, luhnCard } from './support/attacker';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { createDatabase, dropDatabase } from './support/test-database';
import { ApplePaySender } from './support/wallets/apple-pay-sender';
import { GooglePayTestSender } from './support/wallets/google-pay-sender';

/**
 * Wallets end to end (docs/wallets.md), on a database of its own (its dump is scanned for secrets): merchant
 * keys through the API, Apple Pay payloads from an independent sender (test/support/wallets), Google Pay
 * payloads from Google's stand-in, each refusal's code, replays, other tenants, public callers, and a
 * payment at the sandbox with the token made.
 */

const APPLE = '/wallets/apple-pay';
const GOOGLE = '/wallets/google-pay';
const PUBLIC_PER_MINUTE = 3;

describe('wallets', () => {
  let db: { name: string; url: string };
  let t: TestApp;
  let apple: ApplePaySender;
  let expired: ApplePaySender;
  const google = new GooglePayTestSender();
  let a: TestTenant;
  let b: TestTenant;
  let key: string;
  /** DPANs and cryptograms the payloads carried, and the merchant keys made: none may be found stored or logged. */
  const planted: { kind: string; value: string }[] = [];
  const keyIds: { tenantId: string; id: string }[] = [];

  beforeAll(async () => {
    db = await createDatabase('vault_test_wallets');
    apple = await ApplePaySender.create();
    expired = await ApplePaySender.create({ expiredIntermediate: true });
    const dir = mkdtempSync(join(tmpdir(), 'wallets-e2e-'));
    writeFileSync(join(dir, 'apple-roots.pem'), `${apple.rootPem}\n${expired.rootPem}`);
    t = await startApp({
      DATABASE_URL: db.url,
      LOG_LEVEL: 'trace',
      APPLE_PAY_ROOT_CA: join(dir, 'apple-roots.pem'),
      GOOGLE_PAY_ROOT_KEYS: google.writeRootKeysFile(dir),
      PUBLIC_TOKENIZE_PER_MINUTE: String(PUBLIC_PER_MINUTE),
    });
    a = await newTenant(t, 'wallets a');
    b = await newTenant(t, 'wallets b');
    key = (
      await newApplication(t, a.managementKey, { type: 'private', permissions: ORCHESTRATION_PERMISSIONS })
    ).key;
  });
  afterAll(async () => {
    await t?.close();
    if (db) await dropDatabase(db.name);
  });

  const call = (method: 'get' | 'post' | 'put' | 'delete', path: string, apiKey: string) =>
    request(t.http)[method](path).set('BT-API-KEY', apiKey);

  /** An active Apple Pay key of the tenant's: its CSR certified by the test "Apple" CA; the merchant as Apple knows it. */
  async function appleKey(tenant = a, merchantId = 'merchant.com.example.shop') {
    const created = await call('post', `${APPLE}/merchant-keys`, tenant.managementKey).expect(201);
    keyIds.push({ tenantId: tenant.tenantId, id: created.body.id });
    const certificatePem = await apple.issueMerchantCertificate(created.body.csr, merchantId);
    await call('put', `${APPLE}/merchant-keys/${created.body.id}`, tenant.managementKey)
      .send({ certificate: certificatePem })
      .expect(200);
    return { id: created.body.id as string, target: { certificatePem, merchantId } };
  }

  /** A payment's DPAN and cryptogram, fresh and planted for the scan. */
  function payment() {
    const dpan = luhnCard('4', 16);
    const cryptogram = randomBytes(20).toString('base64');
    planted.push({ kind: 'DPAN', value: dpan }, { kind: 'cryptogram', value: cryptogram });
    return { dpan, cryptogram };
  }

  const postApple = (paymentData: unknown, apiKey = key) =>
    call('post', `${APPLE}/tokens`, apiKey).send({ payment_data: paymentData });

  function expectRefusal(res: request.Response, status: number, code: string, payload: unknown) {
    expectProblem(res, status);
    expect(res.body.code).toBe(code);
    const header = (payload as { header?: { transactionId?: string } }).header;
    if (header?.transactionId) expect(JSON.stringify(res.body)).not.toContain(header.transactionId);
  }

  it("Apple Pay keys: a CSR, the certificate (another key's is a 400 naming certificate), list, get, delete, 5 active", async () => {
    const created = await call('post', `${APPLE}/merchant-keys`, a.managementKey).expect(201);
    expect(created.body).toMatchObject({ wallet: 'apple_pay', status: 'pending' });
    expect(created.body.csr).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
    expect(JSON.stringify(created.body)).not.toMatch(/PRIVATE|private_key/);
    const other = await call('post', `${APPLE}/merchant-keys`, a.managementKey).expect(201);
    const wrong = await call('put', `${APPLE}/merchant-keys/${created.body.id}`, a.managementKey).send({
      certificate: await apple.issueMerchantCertificate(other.body.csr, 'merchant.com.example.shop'),
    });
    expectProblem(wrong, 400);
    expect(Object.keys(wrong.body.errors)).toEqual(['certificate']);
    await call('delete', `${APPLE}/merchant-keys/${other.body.id}`, a.managementKey).expect(204);
    await call('delete', `${APPLE}/merchant-keys/${created.body.id}`, a.managementKey).expect(204);
    await call('get', `${APPLE}/merchant-keys/${created.body.id}`, a.managementKey).expect(404);

    const tenant = await newTenant(t, 'wallets keys');
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await appleKey(tenant, `merchant.com.example.${i}`));
    const shown = await call('get', `${APPLE}/merchant-keys/${made[0].id}`, tenant.managementKey).expect(200);
    expect(shown.body).toMatchObject({
      status: 'active',
      merchant_identifier: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const sixth = await call('post', `${APPLE}/merchant-keys`, tenant.managementKey).expect(201);
    const refused = await call('put', `${APPLE}/merchant-keys/${sixth.body.id}`, tenant.managementKey).send({
      certificate: await apple.issueMerchantCertificate(sixth.body.csr, 'merchant.com.example.6'),
    });
    expectRefusal(refused, 409, 'too_many_keys', {});
    const list = await call('get', `${APPLE}/merchant-keys?size=3`, tenant.managementKey).expect(200);
    expect(list.body.pagination).toMatchObject({ total_items: 6, page_size: 3 });
    // Another tenant sees, changes and deletes none of them.
    for (const method of ['get', 'delete'] as const)
      await call(method, `${APPLE}/merchant-keys/${made[0].id}`, b.managementKey).expect(404);
    const theirs = await call('get', `${APPLE}/merchant-keys`, b.managementKey).expect(200);
    expect(theirs.body.data.map((k: { id: string }) => k.id)).not.toContain(made[0].id);
  });

  it('Google Pay keys: the public key to register, at most 5 active, invisible to another tenant', async () => {
    const tenant = await newTenant(t, 'wallets google keys');
    const ids = [];
    for (let i = 0; i < 5; i++) {
      const res = await call('post', `${GOOGLE}/merchant-keys`, tenant.managementKey)
        .send({ gateway_merchant_id: `shop-${i}` })
        .expect(201);
      expect(Buffer.from(res.body.public_key, 'base64')[0]).toBe(4);
      ids.push(res.body.id);
      keyIds.push({ tenantId: tenant.tenantId, id: res.body.id });
    }
    const sixth = await call('post', `${GOOGLE}/merchant-keys`, tenant.managementKey).send({
      gateway_merchant_id: 'x',
    });
    expectRefusal(sixth, 409, 'too_many_keys', {});
    await call('delete', `${GOOGLE}/merchant-keys/${ids[0]}`, b.managementKey).expect(404);
    await call('get', `${GOOGLE}/merchant-keys/${ids[0]}`, b.managementKey).expect(404);
    await call('delete', `${GOOGLE}/merchant-keys/${ids[0]}`, tenant.managementKey).expect(204);
    await call('post', `${GOOGLE}/merchant-keys`, tenant.managementKey)
      .send({ gateway_merchant_id: 'y' })
      .expect(201);
  });

  it('makes an Apple Pay payload a masked network token, and pays with it at the sandbox', async () => {
    const merchant = await appleKey();
    const { dpan, cryptogram } = payment();
    const res = await postApple(
      await apple.paymentData(merchant.target, { dpan, cryptogram, eci: '05' }),
    ).expect(201);
    expect(res.body).toMatchObject({
      type: 'network_token',
      mask: { number: `XXXXXXXXXXXX${dpan.slice(-4)}`, source: 'apple_pay', scheme: 'visa' },
    });
    expect(JSON.stringify(res.body)).not.toContain(cryptogram);
    expect(JSON.stringify(res.body)).not.toContain(dpan);
    const stripe = (await newConnection(t, key, { currencies: ['USD'], countries: ['US'] })).id;
    const paid = await call('post', '/orchestration/transactions', key)
      .send({ amount: 1000, currency: 'USD', country: 'US', token: res.body.id, connection_id: stripe })
      .expect(201);
    expect(paid.body).toMatchObject({
      status: 'authorization_succeeded',
      payment_method: { method: 'network_token', source: 'apple_pay' },
    });
  });

  it('refuses each faulty Apple Pay payload with its fixed code, nothing created', async () => {
    const merchant = await appleKey();
    const stranger = await ApplePaySender.create();
    const cases: [string, Promise<Record<string, unknown>>][] = [
      ['wallet_signature_invalid', stranger.paymentData(merchant.target)],
      ['wallet_signature_invalid', apple.paymentData(merchant.target, { badSignature: true })],
      ['wallet_expired', expired.paymentData(merchant.target)],
      [
        'wallet_expired',
        apple.paymentData(merchant.target, { signingTime: new Date(Date.now() - 6 * 60_000) }),
      ],
      [
        'wallet_key_unknown',
        apple.paymentData({ ...merchant.target, certificatePem: (await appleKey(b)).target.certificatePem }),
      ],
      ['wallet_payload_invalid', apple.paymentData(merchant.target, { corrupt: 'ciphertext' })],
      ['wallet_payload_invalid', apple.paymentData(merchant.target, { corrupt: 'tag' })],
      ['wallet_payload_invalid', Promise.resolve({ version: 'EC_v1', data: 'not base64!' })],
    ];
    const made = async () =>
      (
        await t.app
          .get(DataSource)
          .query<{ n: number }[]>('SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1', [a.tenantId])
      )[0].n;
    const before = await made();
    for (const [code, building] of cases) {
      const payload = await building;
      expectRefusal(await postApple(payload), 400, code, payload);
    }
    expect(await made()).toBe(before);
  });

  it('a replay is a 409; a refused payload does not use its transaction id up; replays are per tenant', async () => {
    const merchant = await appleKey();
    const transactionId = randomBytes(32).toString('hex');
    const refused = await apple.paymentData(merchant.target, { transactionId, corrupt: 'tag' });
    expectRefusal(await postApple(refused), 400, 'wallet_payload_invalid', refused);
    const good = await apple.paymentData(merchant.target, { transactionId, ...payment() });
    await postApple(good).expect(201);
    expectRefusal(await postApple(good), 409, 'wallet_replayed', good);
    // Tenant B's key never decrypts tenant A's payload, nor A's key B's.
    const bKey = (
      await newApplication(t, b.managementKey, { type: 'private', permissions: ['token:create'] })
    ).key;
    expectRefusal(await postApple(good, bKey), 400, 'wallet_key_unknown', good);
  });

  it('a public key and a session may post a payload, within PUBLIC_TOKENIZE_PER_MINUTE', async () => {
    const merchant = await appleKey();
    const pub = (await newApplication(t, a.managementKey, { type: 'public', permissions: ['token:create'] }))
      .key;
    const session = await authorizedSession(t, pub, key, { permissions: ['token:create'] });
    // The limit counts per clock minute: start early enough in one that the requests all fall in it.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 30_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
    await postApple(await apple.paymentData(merchant.target, payment()), pub).expect(201);
    await postApple(await apple.paymentData(merchant.target, payment()), session).expect(201);
    for (let i = 2; i < PUBLIC_PER_MINUTE; i++)
      await postApple(await apple.paymentData(merchant.target, payment()), pub).expect(201);
    expectProblem(await postApple(await apple.paymentData(merchant.target, payment()), pub), 429);
  });

  it('Google Pay: a network token, PAN_ONLY a card, a replay a 409, each faulty payload its code, its id kept', async () => {
    const created = await call('post', `${GOOGLE}/merchant-keys`, a.managementKey)
      .send({ gateway_merchant_id: 'acme-shop' })
      .expect(201);
    keyIds.push({ tenantId: a.tenantId, id: created.body.id });
    const target = { recipientPublicKey: created.body.public_key, gatewayMerchantId: 'acme-shop' };
    const { dpan, cryptogram } = payment();
    const token = google.token({ ...target, pan: dpan, cryptogram });
    const res = await call('post', `${GOOGLE}/tokens`, key).send({ token }).expect(201);
    expect(res.body).toMatchObject({ type: 'network_token', mask: { source: 'google_pay' } });
    expect(JSON.stringify(res.body)).not.toContain(cryptogram);
    expectRefusal(await call('post', `${GOOGLE}/tokens`, key).send({ token }), 409, 'wallet_replayed', {});
    const card = await call('post', `${GOOGLE}/tokens`, key)
      .send({ token: google.token({ ...target, authMethod: 'PAN_ONLY', pan: payment().dpan }) })
      .expect(201);
    expect(card.body.type).toBe('card');
    const faults = {
      wrong_root: 'wallet_signature_invalid',
      bad_signature: 'wallet_signature_invalid',
      other_recipient: 'wallet_signature_invalid',
      expired_intermediate: 'wallet_expired',
      expired_message: 'wallet_expired',
      unknown_key: 'wallet_key_unknown',
      tampered_ciphertext: 'wallet_payload_invalid',
      tampered_tag: 'wallet_payload_invalid',
    } as const;
    const messageId = `message-${randomBytes(8).toString('hex')}`;
    for (const [fault, code] of Object.entries(faults)) {
      const refused = google.token({ ...target, fault: fault as keyof typeof faults, messageId });
      const res = await call('post', `${GOOGLE}/tokens`, key).send({ token: refused });
      expectRefusal(res, 400, code, {});
      expect(JSON.stringify(res.body)).not.toContain(messageId);
    }
    // None of them used the message id up.
    const again = payment();
    await call('post', `${GOOGLE}/tokens`, key)
      .send({ token: google.token({ ...target, messageId, pan: again.dpan, cryptogram: again.cryptogram }) })
      .expect(201);
  });

  it('stores and logs no DPAN, cryptogram or merchant private key (pg_dump, the server log)', async () => {
    const tenantKeys = t.app.get(TenantKeysService);
    const rows = await t.app
      .get(DataSource)
      .query<{ tenant_id: string; id: string; private_key: Buffer }[]>(
        'SELECT tenant_id, id, private_key FROM wallet_merchant_keys',
      );
    const { openMerchantKey } = await import('../src/modules/wallets/merchant-key-material');
    for (const row of rows) {
      const { encryption } = await tenantKeys.keysFor(row.tenant_id);
      const privateKey = openMerchantKey(encryption, row.tenant_id, row.id, row.private_key);
      const d = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url');
      planted.push({ kind: 'private key (d)', value: d.toString('latin1') });
      const der = privateKey.export({ format: 'der', type: 'pkcs8' });
      planted.push({ kind: 'private key (PKCS #8)', value: der.toString('latin1') });
    }
    expect(rows.length).toBeGreaterThan(10);
    const dump = execFileSync('pg_dump', ['--data-only', '--no-owner', db.url], {
      maxBuffer: 256 * 1024 * 1024,
    }).toString('latin1');
    expect(dump).toContain('wallet_merchant_keys');
    // The scan finds what is there (a tenant's name), and had payments to look for.
    expect(forms(Buffer.from('wallets a')).some((pattern) => dump.includes(pattern))).toBe(true);
    expect(planted.filter((p) => p.kind === 'DPAN').length).toBeGreaterThan(5);
    const log = t.logs.join('\n');
    const hits: string[] = [];
    for (const { kind, value } of planted)
      for (const pattern of forms(Buffer.from(value, 'latin1')))
        for (const [where, text] of [
          ['dump', dump],
          ['log', log],
        ] as const)
          if (text.includes(pattern)) hits.push(`${kind} in the ${where} as ${pattern}`);
    expect(hits).toEqual([]);
  });
});

/** A value's forms: clear, hex (both cases), base64 and base64url at each of the three alignments. */
function forms(bytes: Buffer): string[] {
  const cores = (alphabet: 'base64' | 'base64url') =>
    [0, 1, 2].map((k) => {
      const encoded = Buffer.concat([Buffer.alloc(k, 0), bytes]).toString(alphabet);
      return encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
    });
  const hex = bytes.toString('hex');
  return [bytes.toString('latin1'), hex, hex.toUpperCase(), ...cores('base64'), ...cores('base64url')];
}
