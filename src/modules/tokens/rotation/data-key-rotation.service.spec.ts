import { openCvc, openData } from '../data/seal-data';
import { dataKeyRotationOn } from '../../../../test/support/service-stacks';
import {
  CARD,
  cardNumber,
  origin,
  OTHER_TENANT,
  setUp,
  TENANT,
  tokens,
  useTokenizeDatabase,
} from '../../../../test/support/tokenize-fixture';

/** `vault keys rotate --tenant-keys` on the real SQL: generations made, tokens and CVCs sealed again, runs resumed. */
const database = useTokenizeDatabase();

interface CvcRow {
  tenant_id: string;
  token_id: string;
  cvc: Buffer;
  data_key: number;
}
const cvcs = () =>
  database().rows<CvcRow>('SELECT tenant_id, token_id, cvc, data_key FROM token_cvcs ORDER BY token_id');
const generations = () =>
  database().rows<{ tenant_id: string; generation: number }>(
    'SELECT tenant_id, generation FROM tenant_data_keys ORDER BY tenant_id, generation',
  );

/** `n` cards (with CVCs) of the tenant, and 2 of the other; what each token holds, by id. */
async function tokenize(n: number): Promise<Map<string, unknown>> {
  const s = setUp({ limit: 1000 });
  const given = new Map<string, unknown>();
  for (let i = 0; i < n; i++) {
    const data = { ...CARD, number: cardNumber(i) };
    const { id } = await s.service.createOne(origin(), { type: 'card', data: { ...data, cvc: '123' } });
    given.set(id, data);
  }
  for (const tenant of [OTHER_TENANT, OTHER_TENANT]) {
    const { id } = await s.service.createOne(origin(['token:create'], tenant), {
      type: 'token',
      data: { secret: `of ${tenant}` },
    });
    given.set(id, { secret: `of ${tenant}` });
  }
  return given;
}

/** Every token and CVC opened by keys read afresh: each token's data as given, each CVC 123. */
async function expectAllOpen(given: Map<string, unknown>, generation: number): Promise<void> {
  const keys = database().freshTenantKeys();
  const rows = await tokens();
  expect(rows.map((row) => row.data_key)).toEqual(rows.map(() => generation));
  for (const row of rows)
    expect(openData(await keys.keysWith(row.tenant_id, [row.data_key]), row)).toEqual(given.get(row.id));
  for (const cvc of await cvcs()) {
    expect(cvc.data_key).toBe(generation);
    const tenantKeys = await keys.keysWith(cvc.tenant_id, [cvc.data_key]);
    expect(
      openCvc(
        tenantKeys,
        { tenant_id: cvc.tenant_id, id: cvc.token_id },
        { cvc: cvc.cvc, dataKey: cvc.data_key },
      ),
    ).toBe('123');
  }
}

beforeEach(() => database().rows('DELETE FROM data_key_rotations; DELETE FROM tenant_data_keys'));

it('gives every tenant a new data key and seals every token and CVC again under it, in batches', async () => {
  const given = await tokenize(23);
  const before = new Map((await tokens()).map((row) => [row.id, row.data]));
  const progress: [number, number][] = [];
  const rotated = await dataKeyRotationOn(database()).run(7, (done, total) => progress.push([done, total]));
  expect(rotated).toMatchObject({ resumed: false, tokens: 25, cvcs: 23, retired: 0 });
  expect(rotated.tenants).toBeGreaterThanOrEqual(2);
  expect(progress).toEqual([
    [7, 25],
    [14, 25],
    [21, 25],
    [25, 25],
  ]);
  await expectAllOpen(given, 1);
  for (const row of await tokens()) expect(row.data.equals(before.get(row.id)!)).toBe(false);
  const log = await database().rows<{ message: string }>(
    `SELECT message FROM audit_logs WHERE entity_type = 'key' ORDER BY created_at, ctid`,
  );
  expect(log.map((row) => row.message)).toEqual([
    expect.stringMatching(/^Data key rotation \S+ started: a new data key for \d+ tenants; 0 earlier/),
    expect.stringMatching(/finished: 25 tokens and 23 CVCs sealed again/),
  ]);
  expect(await dataKeyRotationOn(database()).status()).toBeNull();
});

it('goes on with an interrupted run, making no new key, until every token is under the new one', async () => {
  const given = await tokenize(20);
  const rotation = dataKeyRotationOn(database());
  const crashed = await rotation
    .run(5, () => {
      throw new Error('killed after the first batch');
    })
    .catch((error: Error) => error.message);
  expect(crashed).toBe('killed after the first batch');
  const keysNow = await generations();
  expect(await rotation.status()).toEqual({ done: 5, total: 22, cvcs_pending: 20 });
  // Meanwhile every token still opens: under whichever generation it names.
  const keys = database().freshTenantKeys();
  for (const row of await tokens())
    expect(openData(await keys.keysWith(row.tenant_id, [row.data_key]), row)).toEqual(given.get(row.id));

  const resumed = await dataKeyRotationOn(database()).run(5, () => undefined);
  expect(resumed).toMatchObject({ resumed: true, tenants: 0, tokens: 17, cvcs: 20 });
  expect(await generations()).toEqual(keysNow);
  await expectAllOpen(given, 1);
});

it('makes a newer generation each run and destroys, at the next, the ones no token uses', async () => {
  const given = await tokenize(3);
  const rotation = dataKeyRotationOn(database());
  await rotation.run(100, () => undefined);
  await rotation.run(100, () => undefined);
  await expectAllOpen(given, 2);
  const second = await generations();
  expect(new Set(second.map((row) => row.generation))).toEqual(new Set([1, 2]));
  const third = await rotation.run(100, () => undefined);
  expect(third.retired).toBe(second.length / 2);
  expect(new Set((await generations()).map((row) => row.generation))).toEqual(new Set([2, 3]));
  await expectAllOpen(given, 3);
});

it("reads a generation made by another instance's rotation, and never opens another tenant's token", async () => {
  const given = await tokenize(2);
  const instance = database().freshTenantKeys();
  expect((await instance.keysFor(TENANT)).data.generation).toBe(0);
  await dataKeyRotationOn(database()).run(100, () => undefined);
  // No change notification on the embedded database: the cached keys lag until a row names a newer one.
  expect((await instance.keysFor(TENANT)).data.generation).toBe(0);
  const [row] = (await tokens()).filter((token) => token.tenant_id === TENANT);
  const keys = await instance.keysWith(TENANT, [row.data_key]);
  expect(keys.data.generation).toBe(1);
  expect(openData(keys, row)).toEqual(given.get(row.id));
  const other = await instance.keysWith(OTHER_TENANT, [1]);
  expect(() => openData(other, { ...row })).toThrow();
  expect(() => openData(other, { ...row, tenant_id: OTHER_TENANT })).toThrow();
});
