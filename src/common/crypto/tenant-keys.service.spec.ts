import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { MemoryKek } from './key-encryption-key';
import { MasterKeyRing } from './master-keys';
import { HSM_CACHE_MS, KeysInsideChangeError } from './tenant-keys.service';

/**
 * The rule "load a tenant's keys before a change opens": a cache miss from the work of a transaction
 * change would read through the pool while the change holds its connection, for ever on the embedded
 * database (a pool of one). The service refuses such a miss at once, and the change rolls back.
 */
let db: ServiceDatabase;
let tenantId: string;

beforeAll(async () => {
  db = await openServiceDatabase();
  tenantId = await db.newTenant();
});
afterAll(() => db.close());

const freshKeys = (over?: MasterKeyRing) => db.freshTenantKeys(over);

/** A change of the tenant's that also writes a row (to see it roll back); the work runs inside it. */
const renameWhile = (name: string, work: () => Promise<unknown>) =>
  db.work.transaction({}, async (change) => {
    await change.query('UPDATE tenants SET name = $2 WHERE id = $1', [tenantId, name]);
    await work();
  });

const nameOf = async () =>
  (await db.rows<{ name: string }>('SELECT name FROM tenants WHERE id = $1', [tenantId]))[0].name;

it('refuses a miss inside a transaction change, loudly, and the change rolls back', async () => {
  const keys = freshKeys();
  const refused = await renameWhile('renamed', () => keys.keysFor(tenantId)).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(KeysInsideChangeError);
  expect((refused as Error).message).toMatch(/before the change opens/);
  expect(await nameOf()).toBe('tenant');
});

it('reads a miss in the change handed in', async () => {
  const keys = freshKeys();
  await db.work.transaction({}, async (change) => {
    expect((await keys.keysFor(tenantId, change)).encryption).toHaveLength(32);
  });
});

it('serves keys loaded before the change opens from the cache', async () => {
  const keys = freshKeys();
  const before = await keys.keysFor(tenantId);
  await renameWhile('loaded before', async () => expect(await keys.keysFor(tenantId)).toBe(before));
  expect(await nameOf()).toBe('loaded before');
});

it('lets the work of a one-statement change read through the pool (it holds no connection yet)', async () => {
  const keys = freshKeys();
  await db.work.statement({}, async () => {
    expect((await keys.keysFor(tenantId)).fingerprint).toHaveLength(32);
  });
});

it('gives a tenant the same keys from every service, and another tenant others', async () => {
  const other = await db.newTenant('other');
  const [a, b, c] = await Promise.all([
    freshKeys().keysFor(tenantId),
    freshKeys().keysFor(tenantId),
    freshKeys().keysFor(other),
  ]);
  expect(a.encryption.equals(b.encryption)).toBe(true);
  expect(a.encryption.equals(c.encryption)).toBe(false);
});

it('asks an HSM again after 5 minutes (KEY_PROVIDER=pkcs11): a token taken away stops every tenant in time', async () => {
  const inner = new MemoryKek('v1', Buffer.alloc(32, 9)); // the key the service database's ring holds
  let unwraps = 0;
  const counting = {
    version: 'v1',
    wrap: (plaintext: Buffer, aad: string) => inner.wrap(plaintext, aad),
    unwrap: (wrapped: Buffer, aad: string) => (unwraps++, inner.unwrap(wrapped, aad)),
    checkValue: () => inner.checkValue(),
  };
  const now = jest.spyOn(Date, 'now');
  try {
    now.mockReturnValue(1_000_000);
    const hsm = freshKeys(new MasterKeyRing([counting], 'spec', 'pkcs11'));
    await hsm.keysFor(tenantId);
    await hsm.keysFor(tenantId);
    expect(unwraps).toBe(1);
    now.mockReturnValue(1_000_000 + HSM_CACHE_MS - 1);
    await hsm.keysFor(tenantId);
    expect(unwraps).toBe(1);
    now.mockReturnValue(1_000_000 + HSM_CACHE_MS);
    await hsm.keysFor(tenantId);
    expect(unwraps).toBe(2);
    // Keys in memory (env) stay cached.
    const env = freshKeys(new MasterKeyRing([counting], 'spec', 'env'));
    await env.keysFor(tenantId);
    now.mockReturnValue(1_000_000 + 10 * HSM_CACHE_MS);
    await env.keysFor(tenantId);
    expect(unwraps).toBe(3);
  } finally {
    now.mockRestore();
  }
});
