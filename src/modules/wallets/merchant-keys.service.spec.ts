import { createPublicKey, randomUUID } from 'node:crypto';
import { ValidationException } from '../../common/errors/domain.exception';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../test/support/service-database';
import { StoppedClock } from '../../../test/support/stopped-clock';
import { ApplePaySender } from '../../../test/support/wallets/apple-pay-sender';
import { openMerchantKey } from './merchant-key-material';
import { MerchantKeysService } from './merchant-keys.service';
import { WalletsException } from './wallets.errors';
import { WalletsRepository } from './wallets.repository';

let db: ServiceDatabase;
let service: MerchantKeysService;
let sender: ApplePaySender;
let tenant: string;
let other: string;
const clock = new StoppedClock(Date.now());

const origin = (tenantId = tenant): RequestOrigin => ({ actor: principalOf(tenantId, ['wallet:manage']) });
const who = (tenantId = tenant) => origin(tenantId).actor;

beforeAll(async () => {
  db = await openServiceDatabase();
  service = new MerchantKeysService(new WalletsRepository(db.dataSource), db.tenantKeys, clock, db.work);
  sender = await ApplePaySender.create();
});
afterAll(() => db.close());
beforeEach(async () => {
  tenant = await db.newTenant('wallets');
  other = await db.newTenant('other');
});

const rows = (tenantId = tenant) =>
  db.rows<{
    id: string;
    status: string;
    slot: number | null;
    private_key: Buffer;
    merchant_identifier: string | null;
  }>(
    'SELECT id, status, slot, private_key, merchant_identifier FROM wallet_merchant_keys WHERE tenant_id = $1 ORDER BY created_at',
    [tenantId],
  );

const audit = () =>
  db.rows<{ entity_type: string; entity_id: string; operation: string; message: string }>(
    `SELECT entity_type, entity_id, operation, message FROM audit_logs WHERE tenant_id = $1 ORDER BY created_at, ctid`,
    [tenant],
  );

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
}

describe('MerchantKeysService', () => {
  it('makes a pending Apple Pay key and its CSR, then activates it with its certificate', async () => {
    const created = await service.createApplePay(origin());
    expect(created).toMatchObject({ wallet: 'apple_pay', status: 'pending', merchant_identifier: null });
    expect(created.csr).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
    expect(JSON.stringify(created)).not.toMatch(/PRIVATE/);
    const certificate = await sender.issueMerchantCertificate(created.csr, 'merchant.com.example');
    const active = await service.setCertificate(origin(), created.id, certificate);
    expect(active).toMatchObject({ id: created.id, status: 'active' });
    expect(active.merchant_identifier).toMatch(/^[0-9a-f]{64}$/);
    expect(active.not_after).not.toBeNull();
    const [row] = await rows();
    expect(row).toMatchObject({ status: 'active', slot: 1, merchant_identifier: active.merchant_identifier });
    // The private key is sealed under the tenant's key, bound to the tenant and the key.
    const { encryption } = await db.tenantKeys.keysFor(tenant);
    const privateKey = openMerchantKey(encryption, tenant, created.id, row.private_key);
    const { x, y } = createPublicKey(privateKey).export({ format: 'jwk' });
    const point = Buffer.concat([
      Buffer.from([4]),
      Buffer.from(x!, 'base64url'),
      Buffer.from(y!, 'base64url'),
    ]);
    expect(point.toString('base64')).toBe(created.public_key);
    expect(() => openMerchantKey(encryption, other, created.id, row.private_key)).toThrow();
    expect((await audit()).map((a) => [a.entity_type, a.operation, a.message])).toEqual([
      ['wallet_key', 'create', 'Apple Pay merchant key created (waiting for its certificate)'],
      ['wallet_key', 'update', 'Apple Pay merchant key activated'],
    ]);
  });

  it("refuses another key's certificate naming certificate, and changes nothing", async () => {
    const mine = await service.createApplePay(origin());
    const theirs = await service.createApplePay(origin());
    const certificate = await sender.issueMerchantCertificate(theirs.csr, 'merchant.com.example');
    const error = await rejection(service.setCertificate(origin(), mine.id, certificate));
    expect(error).toBeInstanceOf(ValidationException);
    expect((error as ValidationException).errors).toEqual({
      certificate: [expect.stringMatching(/not for this merchant key/)],
    });
    const garbage = await rejection(service.setCertificate(origin(), mine.id, 'not a certificate'));
    expect((garbage as ValidationException).errors).toHaveProperty('certificate');
    expect((await rows()).map((r) => r.status)).toEqual(['pending', 'pending']);
  });

  it('keeps at most 5 active keys per wallet: the 6th is too_many_keys until one is deleted', async () => {
    const made = [];
    for (let i = 0; i < 5; i++)
      made.push(await service.createGooglePay(origin(), { gateway_merchant_id: `shop-${i}` }));
    expect(made.every((key) => key.status === 'active')).toBe(true);
    expect(Buffer.from(made[0].public_key, 'base64')).toHaveLength(65);
    const sixth = await rejection(service.createGooglePay(origin(), { gateway_merchant_id: 'shop-6' }));
    expect(sixth).toMatchObject({ code: 'too_many_keys', kind: 'conflict' });
    // Apple's count is its own; an Apple key beyond 5 active waits pending, its certificate a 409.
    const apple = await service.createApplePay(origin());
    await service.setCertificate(origin(), apple.id, await sender.issueMerchantCertificate(apple.csr, 'm'));
    await service.delete(origin(), 'google_pay', made[2].id);
    const again = await service.createGooglePay(origin(), { gateway_merchant_id: 'shop-7' });
    expect((await rows()).find((r) => r.id === again.id)?.slot).toBe(3);
    expect((await service.list(who(), 'google_pay', { page: 1, size: 20 })).pagination.total_items).toBe(5);
  });

  it('answers 409 for a 6th Apple Pay certificate', async () => {
    for (let i = 0; i < 5; i++) {
      const key = await service.createApplePay(origin());
      await service.setCertificate(origin(), key.id, await sender.issueMerchantCertificate(key.csr, `m${i}`));
    }
    const sixth = await service.createApplePay(origin());
    const error = await rejection(
      service.setCertificate(origin(), sixth.id, await sender.issueMerchantCertificate(sixth.csr, 'm6')),
    );
    expect(error).toMatchObject({ code: 'too_many_keys' });
    expect((await rows()).filter((r) => r.status === 'active')).toHaveLength(5);
  });

  it("never shows, changes or deletes another tenant's key", async () => {
    const key = await service.createGooglePay(origin(), { gateway_merchant_id: 'shop' });
    const apple = await service.createApplePay(origin());
    await expect(service.get(who(other), 'google_pay', key.id)).rejects.toThrow(WalletsException);
    await expect(service.delete(origin(other), 'google_pay', key.id)).rejects.toMatchObject({
      code: 'not_found',
    });
    const certificate = await sender.issueMerchantCertificate(apple.csr, 'm');
    await expect(service.setCertificate(origin(other), apple.id, certificate)).rejects.toMatchObject({
      code: 'not_found',
    });
    expect((await service.list(who(other), 'google_pay', { page: 1, size: 20 })).data).toEqual([]);
    // A key is found under its own wallet only.
    await expect(service.get(who(), 'apple_pay', key.id)).rejects.toMatchObject({ code: 'not_found' });
    expect(await service.get(who(), 'google_pay', key.id)).toMatchObject({
      id: key.id,
      gateway_merchant_id: 'shop',
    });
    await expect(service.get(who(), 'google_pay', randomUUID())).rejects.toMatchObject({ code: 'not_found' });
    expect(await rows()).toHaveLength(2);
  });
});
