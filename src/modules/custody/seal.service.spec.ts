import { KeyCeremony } from '../../common/crypto/key-ceremony';
import { KeyRecords } from '../../common/crypto/key-records';
import { MasterKeyChecksRepository } from '../../common/crypto/master-key-checks.repository';
import { MasterKeyRing, SealedError } from '../../common/crypto/master-keys';
import { parseShare, shareLine } from '../../common/crypto/shares';
import { ProblemException } from '../../common/errors/problem.exception';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { tenantKeyStore } from '../../../test/support/service-stacks';
import { SealService, UNSEAL_ATTEMPTS_PER_MINUTE } from './seal.service';

let db: ServiceDatabase;
let shares: string[];
/** The system log's writer over the spec's database. */
const records = () => new KeyRecords(db.work, tenantKeyStore(db));

beforeAll(async () => {
  db = await openServiceDatabase();
  ({ shares } = await new KeyCeremony(records(), new MasterKeyChecksRepository()).run(3, 2));
});
afterAll(() => db.close());

const sealedService = () => {
  const ring = new MasterKeyRing('sealed', 'spec');
  const service = new SealService(
    ring,
    db.work,
    new MasterKeyChecksRepository(),
    tenantKeyStore(db),
    db.clock,
    records(),
  );
  return { ring, service };
};

const codeOf = (error: unknown): unknown => (error as ProblemException).extras?.code;

describe('KeyCeremony', () => {
  it('records the next version as split with its shape, never the key; answers N share lines', async () => {
    expect(shares).toHaveLength(3);
    const [row] = await db.rows<{ version: string; provider: string; threshold: number; shares: number }>(
      `SELECT version, provider, threshold, shares FROM master_key_checks WHERE provider = 'split'`,
    );
    expect(row).toEqual({ version: 'v1', provider: 'split', threshold: 2, shares: 3 });
  });

  it('refuses bounds it cannot keep, recording nothing', async () => {
    const ceremony = new KeyCeremony(records(), new MasterKeyChecksRepository());
    for (const [n, m] of [
      [3, 4],
      [17, 2],
      [3, 1],
      [2.5, 2],
    ])
      await expect(ceremony.run(n, m)).rejects.toThrow(RangeError);
    expect(await db.rows(`SELECT version FROM master_key_checks`)).toHaveLength(1);
  });
});

describe('SealService', () => {
  it('a sealed ring refuses every use with 503 sealed', () => {
    const { ring } = sealedService();
    expect(() => ring.active).toThrow(SealedError);
    expect(() => ring.get('v1')).toThrow(SealedError);
  });

  it('counts distinct valid shares, refuses others by name without counting, and unseals at the threshold', async () => {
    const { ring, service } = sealedService();
    const waited: string[] = [];
    ring.whenUnsealed(() => waited.push('first tenant'));
    expect(await service.status()).toEqual({ sealed: true, progress: 0, threshold: 2, kek_version: 'v1' });
    const refusal = (line: string) => service.enter(line, 'a').catch(codeOf);
    expect(await refusal('vault-share-v1:v1')).toBe('share_corrupted');
    expect(await refusal(shares[0].replace(/:[0-9a-f]{8}$/, ':00000000'))).toBe('share_corrupted');
    const otherKey = parseShare(shares[0]) as Exclude<ReturnType<typeof parseShare>, 'corrupted'>;
    expect(await refusal(shareLine({ ...otherKey, check: '0'.repeat(16) }))).toBe('share_of_another_key');
    expect(await refusal(shareLine({ ...otherKey, version: 'v9' }))).toBe('share_of_another_key');
    expect((await service.enter(shares[1], 'a')).progress).toBe(1);
    expect(await refusal(shares[1])).toBe('share_already_entered');
    expect(ring.sealed).toBe(true);
    expect(waited).toEqual([]);
    expect(await service.enter(shares[2], 'b')).toEqual({
      sealed: false,
      progress: 0,
      threshold: 2,
      kek_version: 'v1',
    });
    expect(ring.sealed).toBe(false);
    expect(ring.active.version).toBe('v1');
    expect(waited).toEqual(['first tenant']);
  });

  it('shares that each look right but do not open the recorded key are all forgotten', async () => {
    const { ring, service } = sealedService();
    await service.enter(shares[0], 'a');
    const share = parseShare(shares[1]) as Exclude<ReturnType<typeof parseShare>, 'corrupted'>;
    const payload = Buffer.from(share.payload);
    payload[5] ^= 1;
    const refused = await service.enter(shareLine({ ...share, payload }), 'a').catch((e: unknown) => e);
    expect(codeOf(refused)).toBe('shares_do_not_open_key');
    expect((refused as ProblemException).getStatus()).toBe(422);
    expect(ring.sealed).toBe(true);
    expect((await service.status()).progress).toBe(0);
    // The right pair still opens it.
    await service.enter(shares[1], 'a');
    expect((await service.enter(shares[0], 'a')).sealed).toBe(false);
  });

  it('reset forgets the shares entered', async () => {
    const { service } = sealedService();
    await service.enter(shares[0], 'a');
    expect((await service.reset()).progress).toBe(0);
    expect((await service.enter(shares[0], 'a')).progress).toBe(1);
  });

  it(`allows ${UNSEAL_ATTEMPTS_PER_MINUTE} attempts a minute per address`, async () => {
    const { service } = sealedService();
    for (let i = 0; i < UNSEAL_ATTEMPTS_PER_MINUTE; i++)
      await service.enter('x', 'busy').catch(() => undefined);
    const limited = await service.enter(shares[0], 'busy').catch((e: unknown) => e);
    expect(codeOf(limited)).toBe('too_many_unseal_attempts');
    expect((await service.enter(shares[0], 'elsewhere')).progress).toBe(1);
  });
});

describe('SealService with a newer ceremony (rotation under split)', () => {
  let newer: string[];
  const signingKey = `INSERT INTO audit_signing_keys (id, name, key_id, public_key, sealed_seed, master_key_version, created_at)
    VALUES ('00000000-0000-4000-8000-0000000000a1', 'spec/audit', '0a0b0c0d', $1, $2, 'v1', now())`;

  it('an unsealed server takes the shares of the newer version, refuses the old, and adopts it as active', async () => {
    const { ring, service } = sealedService();
    await service.enter(shares[0], 'a');
    await service.enter(shares[1], 'a');
    const changed: string[] = [];
    ring.onChange(() => changed.push(ring.active.version));
    expect(await service.status()).toEqual({ sealed: false, progress: 0, threshold: 2, kek_version: 'v1' });
    ({ shares: newer } = await new KeyCeremony(records(), new MasterKeyChecksRepository()).run(3, 2));
    expect(await service.status()).toEqual({
      sealed: false,
      progress: 0,
      threshold: 2,
      kek_version: 'v1',
      adopting: 'v2',
    });
    expect(await service.enter(shares[2], 'a').catch(codeOf)).toBe('share_of_another_key');
    expect((await service.enter(newer[2], 'a')).progress).toBe(1);
    expect(ring.active.version).toBe('v1');
    expect(await service.enter(newer[0], 'a')).toEqual({
      sealed: false,
      progress: 0,
      threshold: 2,
      kek_version: 'v2',
    });
    expect(ring.keys.map((k) => k.version)).toEqual(['v1', 'v2']);
    expect(changed).toEqual(['v2']);
    // Nothing newer: a share is ignored as before.
    expect((await service.enter(newer[1], 'a')).kek_version).toBe('v2');
  });

  it('sealed, it collects every version still wrapping a key, one after the other, then unseals holding both', async () => {
    await db.rows(signingKey, [Buffer.alloc(32, 1), Buffer.alloc(60, 2)]);
    const { ring, service } = sealedService();
    expect(await service.status()).toEqual({ sealed: true, progress: 0, threshold: 2, kek_version: 'v1' });
    // A share of the later version counts meanwhile.
    expect((await service.enter(newer[1], 'a')).progress).toBe(0);
    await service.enter(shares[0], 'a');
    expect(await service.enter(shares[2], 'a')).toEqual({
      sealed: true,
      progress: 1,
      threshold: 2,
      kek_version: 'v2',
    });
    expect(await service.enter(shares[1], 'a').catch(codeOf)).toBe('share_already_entered');
    expect((await service.enter(newer[2], 'a')).sealed).toBe(false);
    expect(ring.keys.map((k) => k.version)).toEqual(['v1', 'v2']);
    expect(ring.active.version).toBe('v2');
  });

  it('once nothing is under the old version, only the newer one is asked for', async () => {
    await db.rows(`DELETE FROM audit_signing_keys WHERE master_key_version = 'v1'`);
    const { ring, service } = sealedService();
    expect(await service.status()).toEqual({ sealed: true, progress: 0, threshold: 2, kek_version: 'v2' });
    expect(await service.enter(shares[0], 'a').catch(codeOf)).toBe('share_of_another_key');
    await service.enter(newer[0], 'a');
    await service.enter(newer[1], 'a');
    expect(ring.keys.map((k) => k.version)).toEqual(['v2']);
  });
});
