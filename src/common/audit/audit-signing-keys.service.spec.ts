import { randomBytes, randomUUID } from 'node:crypto';
import { StoppedClock } from '../../../test/support/stopped-clock';
import { auditStack, MASTER_V1, MASTER_V2, type AuditStack } from '../../../test/support/audit-stack';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import type { SigningKey } from './audit-signing-keys.service';
import { keyId, noteSignedBy, publicKeyOf, signNote, verifierKey } from './tree/signed-note';

/**
 * The checkpoint signing keys on the real SQL: one generated and kept sealed under the master key, or the
 * configured one; every key listed stays listed; only keys whose sealed seed opens under a master key the
 * service holds are trusted; master key rotation seals them again.
 */
let db: ServiceDatabase;
let audit: AuditStack;

beforeAll(async () => {
  db = await openServiceDatabase();
  audit = auditStack(db);
});
afterAll(() => db.close());

const NAME = 'vault.example:8443/audit';
const current = (stack: AuditStack = audit) =>
  db.work.transaction({}, (change) => stack.keys.current(change));
const rows = () =>
  db.rows<{
    name: string;
    key_id: string;
    public_key: Buffer;
    sealed_seed: Buffer;
    master_key_version: string;
  }>(
    'SELECT name, key_id, public_key, sealed_seed, master_key_version FROM audit_signing_keys ORDER BY created_at, id',
  );
/** Whether a note signed by `key` is taken for the service's by `stack`. */
const trustedBy = async (stack: AuditStack, key: SigningKey) => {
  const note = signNote('checkpoint\n', key.name, key.seed);
  return (await stack.keys.trusted()).some((k) => noteSignedBy(note, k));
};

let generated: SigningKey;

it("names the keys and each tenant's log after PUBLIC_BASE_URL's host and port", () => {
  expect(audit.keys.name).toBe(NAME);
  expect(audit.keys.origin('00000000-0000-4000-8000-0000000000a1')).toBe(
    `${NAME}/00000000-0000-4000-8000-0000000000a1`,
  );
});

it('generates a key on first use, lists it with its seed sealed, and keeps using it', async () => {
  generated = await current();
  expect(generated).toMatchObject({ name: NAME, keyId: keyId(generated) });
  expect(generated.publicKey.equals(publicKeyOf(generated.seed))).toBe(true);
  const [row] = await rows();
  expect(row).toMatchObject({ name: NAME, key_id: generated.keyId, master_key_version: 'v1' });
  expect(row.public_key.equals(generated.publicKey)).toBe(true);
  expect(row.sealed_seed.includes(generated.seed)).toBe(false);
  // Later calls (and another instance) find it: no second key.
  const again = await current(auditStack(db));
  expect(again.seed.equals(generated.seed)).toBe(true);
  expect(await rows()).toHaveLength(1);
});

it('publishes every listed key in the verifier format', async () => {
  expect(await audit.keys.published()).toEqual([
    {
      name: NAME,
      key_id: generated.keyId,
      public_key: generated.publicKey.toString('base64'),
      verifier_key: verifierKey(generated),
      created_at: audit.clock.now().toISOString(),
    },
  ]);
});

it('lists nothing when the change that would list a key fails', async () => {
  const elsewhere = auditStack(db, { config: { publicBaseUrl: 'https://elsewhere.example' } });
  const failed = db.work.transaction({}, async (change) => {
    await elsewhere.keys.current(change);
    throw new Error('the checkpoint failed');
  });
  await expect(failed).rejects.toThrow('the checkpoint failed');
  expect(await rows()).toHaveLength(1);
});

it('signs with AUDIT_SIGNING_KEY when it is set, listing it beside the old ones', async () => {
  const seed = randomBytes(32);
  // A minute after the generated key: the keys are listed, and the newest chosen, by when they were made
  // (on one stopped clock both would tie, and their random ids would decide).
  const later = new StoppedClock();
  later.advance(60_000);
  const configured = auditStack(db, { config: { AUDIT_SIGNING_KEY: seed.toString('base64') }, clock: later });
  const key = await current(configured);
  expect(key.seed.equals(seed)).toBe(true);
  expect(await current(configured)).toMatchObject({ keyId: key.keyId });
  const listed = await configured.keys.published();
  expect(listed.map((k) => k.key_id)).toEqual([generated.keyId, key.keyId]);
  // Without the setting, the newest key whose seed opens is used again: the configured one.
  expect((await current()).keyId).toBe(key.keyId);
});

it('trusts only the keys whose sealed seed opens under a master key it holds', async () => {
  expect(await trustedBy(audit, generated)).toBe(true);
  // A key someone with database access listed, without the master key: its seed does not open.
  const planted = randomBytes(32);
  const publicKey = publicKeyOf(planted);
  await db.rows(
    `INSERT INTO audit_signing_keys (id, name, key_id, public_key, sealed_seed, master_key_version, created_at)
     VALUES ($1, $2, $3, $4, $5, 'v1', now())`,
    [randomUUID(), NAME, keyId({ name: NAME, publicKey }), publicKey, randomBytes(60)],
  );
  const plantedKey: SigningKey = { name: NAME, publicKey, seed: planted, keyId: '' };
  expect(await trustedBy(audit, plantedKey)).toBe(false);
  expect((await audit.keys.published()).some((k) => k.public_key === publicKey.toString('base64'))).toBe(
    true,
  );
  // A service under other master keys vouches for none of them.
  const stranger = auditStack(db, { ring: [MASTER_V2] });
  expect(await trustedBy(stranger, generated)).toBe(false);
});

it('seals every key again under the active master key on rotation, once', async () => {
  const rotated = auditStack(db, { ring: [MASTER_V1, MASTER_V2] });
  // The two keys of this service; the planted one does not open and is left as it is.
  expect(await rotated.keys.reseal()).toBe(2);
  expect((await rows()).map((r) => r.master_key_version)).toEqual(['v2', 'v2', 'v1']);
  expect(await rotated.keys.reseal()).toBe(0);
  // The old master key can go: a service holding only the new one still vouches for them.
  const afterRotation = auditStack(db, { ring: [MASTER_V2] });
  expect(await trustedBy(afterRotation, generated)).toBe(true);
  expect(await trustedBy(audit, generated)).toBe(false);
});
