import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import type { RetentionJob } from '../../common/jobs/retention.job';
import type { AppConfig } from '../../config/app-config';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../test/support/service-database';
import { tokensOn } from '../../../test/support/service-stacks';
import { StoppedClock } from '../../../test/support/stopped-clock';
import { ApplePaySender } from '../../../test/support/wallets/apple-pay-sender';
import { GooglePayTestSender } from '../../../test/support/wallets/google-pay-sender';
import { MerchantKeysService } from './merchant-keys.service';
import { WalletReplayRetention } from './wallet-replay-retention';
import { WalletRoots } from './wallet-roots';
import { WalletTokensService } from './wallet-tokens.service';
import { WalletsRepository } from './wallets.repository';

let db: ServiceDatabase;
let apple: ApplePaySender;
const google = new GooglePayTestSender();
let keys: MerchantKeysService;
let service: WalletTokensService;
let tenant: string;
let other: string;
const clock = new StoppedClock(Date.now());

const origin = (tenantId = tenant): RequestOrigin => ({
  actor: principalOf(tenantId, ['token:create', 'token:read', 'wallet:manage']),
});

function walletTokens(roots: Pick<WalletRoots, 'apple' | 'google'>): WalletTokensService {
  const { tokenizer } = tokensOn(db, clock);
  return new WalletTokensService(
    new WalletsRepository(db.dataSource),
    db.tenantKeys,
    tokenizer,
    roots,
    clock,
  );
}

beforeAll(async () => {
  db = await openServiceDatabase();
  apple = await ApplePaySender.create();
  const dir = mkdtempSync(join(tmpdir(), 'wallet-roots-'));
  writeFileSync(join(dir, 'apple.pem'), apple.rootPem);
  const roots = new WalletRoots({
    APPLE_PAY_ROOT_CA: join(dir, 'apple.pem'),
    GOOGLE_PAY_ROOT_KEYS: google.writeRootKeysFile(dir),
  } as AppConfig);
  keys = new MerchantKeysService(new WalletsRepository(db.dataSource), db.tenantKeys, clock, db.work);
  service = walletTokens(roots);
});
afterAll(() => db.close());
beforeEach(async () => {
  tenant = await db.newTenant('wallets');
  other = await db.newTenant('other');
});

/** An active Apple Pay key of the tenant's, as Apple knows the merchant. */
async function appleMerchant(tenantId = tenant, merchantId = 'merchant.com.example') {
  const key = await keys.createApplePay(origin(tenantId));
  const certificatePem = await apple.issueMerchantCertificate(key.csr, merchantId);
  await keys.setCertificate(origin(tenantId), key.id, certificatePem);
  return { certificatePem, merchantId };
}

const count = async (table: string, tenantId = tenant) =>
  (
    await db.rows<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [tenantId])
  )[0].n;

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { code: string }).code;
  }
  return 'accepted';
}

describe('WalletTokensService, Apple Pay', () => {
  it('makes a verified payload a network token: masked, its cryptogram sealed apart, its id recorded', async () => {
    const merchant = await appleMerchant();
    const token = await service.applePay(origin(), await apple.paymentData(merchant, { eci: '5' }));
    expect(token).toMatchObject({
      type: 'network_token',
      mask: { number: 'XXXXXXXXXXXX1111', expiration_month: 12, expiration_year: 2030, source: 'apple_pay' },
    });
    expect(JSON.stringify(token)).not.toContain('AOXLmDd4ZbRGAAGC7gUnAoABFA==');
    expect(JSON.stringify(token)).not.toContain('4111111111111111');
    expect(await count('token_cvcs')).toBe(1);
    expect(await count('wallet_replays')).toBe(1);
  });

  it('refuses a replay with 409, and a refused payload does not use its transaction id up', async () => {
    const merchant = await appleMerchant();
    const transactionId = 'ab'.repeat(32);
    const tampered = await apple.paymentData(merchant, { transactionId, corrupt: 'tag' });
    expect(await codeOf(service.applePay(origin(), tampered))).toBe('wallet_payload_invalid');
    expect(await count('tokens')).toBe(0);
    const good = await apple.paymentData(merchant, { transactionId });
    await service.applePay(origin(), good);
    expect(await codeOf(service.applePay(origin(), good))).toBe('wallet_replayed');
    expect(await count('tokens')).toBe(1);
    // Replays are per tenant: another tenant's own key for the same payload shape is its own matter.
    expect(await count('wallet_replays', other)).toBe(0);
  });

  it('keeps a transaction id until a day after its payload could be accepted (the retention job)', async () => {
    const merchant = await appleMerchant();
    await service.applePay(origin(), await apple.paymentData(merchant, { signingTime: clock.now() }));
    const [{ expires_at }] = await db.rows<{ expires_at: Date }>(
      'SELECT expires_at FROM wallet_replays WHERE tenant_id = $1',
      [tenant],
    );
    // The signing time is a UTCTime: whole seconds.
    expect(Math.abs(expires_at.getTime() - clock.now().getTime() - 5 * 60_000)).toBeLessThan(1000);
    const retention = new WalletReplayRetention({} as RetentionJob, new WalletsRepository(db.dataSource));
    const purge = (at: number) => db.work.transaction({}, (change) => retention.purge(change, new Date(at)));
    await purge(expires_at.getTime() + 23 * 3600_000);
    expect(await count('wallet_replays')).toBe(1);
    await purge(expires_at.getTime() + 25 * 3600_000);
    expect(await count('wallet_replays')).toBe(0);
  });

  it("answers wallet_key_unknown for another merchant's payload, another tenant's key included", async () => {
    const theirs = await appleMerchant(other, 'merchant.com.other');
    await appleMerchant();
    expect(await codeOf(service.applePay(origin(), await apple.paymentData(theirs)))).toBe(
      'wallet_key_unknown',
    );
    expect(await count('tokens')).toBe(0);
  });

  it('answers the fixed codes before decrypting', async () => {
    const merchant = await appleMerchant();
    const stale = await apple.paymentData(merchant, {
      signingTime: new Date(clock.now().getTime() - 6 * 60_000),
    });
    expect(await codeOf(service.applePay(origin(), stale))).toBe('wallet_expired');
    expect(
      await codeOf(service.applePay(origin(), await apple.paymentData(merchant, { badSignature: true }))),
    ).toBe('wallet_signature_invalid');
    const stranger = await ApplePaySender.create();
    expect(await codeOf(service.applePay(origin(), await stranger.paymentData(merchant)))).toBe(
      'wallet_signature_invalid',
    );
    expect(await codeOf(service.applePay(origin(), { version: 'RSA_v1' }))).toBe('wallet_payload_invalid');
    // A card the tokens module refuses (an expired DPAN) is the payload's fault, told by its code.
    const expiredCard = await apple.paymentData(merchant, { expiration: '200131' });
    expect(await codeOf(service.applePay(origin(), expiredCard))).toBe('wallet_payload_invalid');
    expect(await count('wallet_replays')).toBe(0);
  });
});

describe('WalletTokensService, Google Pay', () => {
  it('makes CRYPTOGRAM_3DS a network token and PAN_ONLY a card; a replay is a 409', async () => {
    const key = await keys.createGooglePay(origin(), { gateway_merchant_id: 'acme' });
    const target = { recipientPublicKey: key.public_key, gatewayMerchantId: 'acme' };
    const payload = google.token({ ...target, now: clock.now() });
    expect(await service.googlePay(origin(), payload)).toMatchObject({
      type: 'network_token',
      mask: { source: 'google_pay' },
    });
    expect(await codeOf(service.googlePay(origin(), payload))).toBe('wallet_replayed');
    const card = await service.googlePay(
      origin(),
      google.token({ ...target, authMethod: 'PAN_ONLY', pan: '5555555555554444', now: clock.now() }),
    );
    expect(card).toMatchObject({ type: 'card', mask: { number: 'XXXXXXXXXXXX4444' } });
    expect(await count('token_cvcs')).toBe(1);
  });

  it("never decrypts with another tenant's key, and names GOOGLE_PAY_ROOT_KEYS when it is unset", async () => {
    const theirs = await keys.createGooglePay(origin(other), { gateway_merchant_id: 'acme' });
    await keys.createGooglePay(origin(), { gateway_merchant_id: 'acme' });
    const payload = google.token({
      recipientPublicKey: theirs.public_key,
      gatewayMerchantId: 'acme',
      now: clock.now(),
    });
    expect(await codeOf(service.googlePay(origin(), payload))).toBe('wallet_key_unknown');
    const unconfigured = walletTokens({ apple: [], google: undefined });
    await expect(unconfigured.googlePay(origin(other), payload)).rejects.toMatchObject({
      code: 'google_pay_not_configured',
      detail: expect.stringContaining('GOOGLE_PAY_ROOT_KEYS'),
    });
  });
});
