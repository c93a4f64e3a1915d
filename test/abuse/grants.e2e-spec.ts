import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from '../support/app';

const ALL_MANAGEMENT = [
  'orchestration:flows:read',
  'orchestration:flows:update',
  'log:read',
  'tenant:read',
  'application:create',
  'application:read',
  'application:update',
  'application:delete',
  'proxy:create',
  'proxy:read',
  'proxy:update',
  'proxy:delete',
  'webhook:create',
  'webhook:read',
  'webhook:update',
  'webhook:delete',
  'wallet:manage',
  'orchestration:relay',
  'token:import',
];

/**
 * Abuse class: grants (docs/reliability.md). Nobody grants what they do not hold: a management key
 * with one application permission cannot raise itself, mint keys for (or update, or delete) an
 * application holding management permissions it lacks, or create one with them; the last application
 * able to administer the tenant cannot be deleted (tenant lockout).
 */
describe('abuse: grants', () => {
  let t: TestApp;
  let db: DataSource;

  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT_PER_MINUTE: '100000' });
    db = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  const limited = (tenant: TestTenant, permissions: string[]) =>
    newApplication(t, tenant.managementKey, { type: 'management', permissions });
  const appRow = async (id: string) =>
    (await db.query('SELECT name, permissions FROM applications WHERE id = $1', [id]))[0] as
      { name: string; permissions: string[] } | undefined;
  const keyCount = async (id: string): Promise<number> =>
    (await db.query('SELECT count(*)::int AS n FROM api_keys WHERE application_id = $1', [id]))[0].n;

  it('application:update alone cannot raise itself, nor touch the bootstrap application or its keys', async () => {
    const tenant = await newTenant(t, 'grants update');
    const updater = await limited(tenant, ['application:update']);
    const raise = await request(t.http)
      .put(`/applications/${updater.id}`)
      .set('BT-API-KEY', updater.key)
      .send({ name: 'me', permissions: ALL_MANAGEMENT });
    expectProblem(raise, 403);
    expect(raise.body.detail).toMatch(/application:create/);
    expect((await appRow(updater.id))!.permissions).toEqual(['application:update']);

    const boot = tenant.managementApplicationId;
    const before = await appRow(boot);
    expectProblem(
      await request(t.http)
        .put(`/applications/${boot}`)
        .set('BT-API-KEY', updater.key)
        .send({ name: 'taken', permissions: ['application:update'] }),
      403,
    );
    expect(await appRow(boot)).toEqual(before);
    const keysBefore = await keyCount(boot);
    const minted = await request(t.http).post(`/applications/${boot}/keys`).set('BT-API-KEY', updater.key);
    expectProblem(minted, 403);
    expect(minted.text).not.toMatch(/key_mgt_/);
    const [bootKey] = await db.query('SELECT id FROM api_keys WHERE application_id = $1', [boot]);
    expectProblem(
      await request(t.http).delete(`/applications/${boot}/keys/${bootKey.id}`).set('BT-API-KEY', updater.key),
      403,
    );
    expect(await keyCount(boot)).toBe(keysBefore);
  });

  it('application:update may still manage what it covers: private and public applications, and its own keys', async () => {
    const tenant = await newTenant(t, 'grants update ok');
    const updater = await limited(tenant, ['application:update']);
    const pvt = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    await request(t.http)
      .put(`/applications/${pvt.id}`)
      .set('BT-API-KEY', updater.key)
      .send({ name: 'renamed', permissions: ['token:read', 'token:create'] })
      .expect(200);
    const key = await request(t.http)
      .post(`/applications/${pvt.id}/keys`)
      .set('BT-API-KEY', updater.key)
      .expect(201);
    await request(t.http)
      .delete(`/applications/${pvt.id}/keys/${key.body.id}`)
      .set('BT-API-KEY', updater.key)
      .expect(204);
    await request(t.http).post(`/applications/${updater.id}/keys`).set('BT-API-KEY', updater.key).expect(201);
  });

  it('application:create cannot create an application with management permissions it lacks', async () => {
    const tenant = await newTenant(t, 'grants create');
    const creator = await limited(tenant, ['application:create']);
    const count = async () =>
      (
        await db.query('SELECT count(*)::int AS n FROM applications WHERE tenant_id = $1', [tenant.tenantId])
      )[0].n;
    const before = await count();
    for (const permissions of [ALL_MANAGEMENT, ['application:create', 'log:read'], ['application:delete']]) {
      const res = await request(t.http)
        .post('/applications')
        .set('BT-API-KEY', creator.key)
        .send({ name: 'escalate', type: 'management', permissions });
      expectProblem(res, 403);
      expect(res.text).not.toMatch(/key_mgt_/);
    }
    expect(await count()).toBe(before);
    await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', creator.key)
      .send({ name: 'same', type: 'management', permissions: ['application:create'] })
      .expect(201);
    await request(t.http)
      .post('/applications')
      .set('BT-API-KEY', creator.key)
      .send({ name: 'pvt', type: 'private', permissions: ['token:read', 'token:use'] })
      .expect(201);
  });

  it('application:delete alone cannot delete an application holding more than it holds', async () => {
    const tenant = await newTenant(t, 'grants delete');
    const deleter = await limited(tenant, ['application:delete']);
    const updater = await limited(tenant, ['application:update']);
    for (const id of [tenant.managementApplicationId, updater.id]) {
      expectProblem(await request(t.http).delete(`/applications/${id}`).set('BT-API-KEY', deleter.key), 403);
      expect(await appRow(id)).toBeDefined();
    }
    const pvt = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    await request(t.http).delete(`/applications/${pvt.id}`).set('BT-API-KEY', deleter.key).expect(204);
  });

  it('the last application holding application:create and application:update cannot be deleted or stripped (409)', async () => {
    const tenant = await newTenant(t, 'grants lockout');
    const boot = tenant.managementApplicationId;
    const self = await request(t.http)
      .delete(`/applications/${boot}`)
      .set('BT-API-KEY', tenant.managementKey);
    expectProblem(self, 409);
    const strip = await request(t.http)
      .put(`/applications/${boot}`)
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'stripped', permissions: ['application:read'] });
    expectProblem(strip, 409);
    expect((await appRow(boot))!.permissions).toEqual(expect.arrayContaining(ALL_MANAGEMENT));

    // With a second administrator, one may go; then the other is the last one again.
    const second = await limited(tenant, ALL_MANAGEMENT);
    await request(t.http).delete(`/applications/${boot}`).set('BT-API-KEY', second.key).expect(204);
    expectProblem(
      await request(t.http).delete(`/applications/${second.id}`).set('BT-API-KEY', second.key),
      409,
    );
    expect(await appRow(second.id)).toBeDefined();
  });

  it('two administrators deleting each other at once leave one of them', async () => {
    for (let round = 0; round < 3; round++) {
      const tenant = await newTenant(t, 'grants race');
      const a = { id: tenant.managementApplicationId, key: tenant.managementKey };
      const b = await limited(tenant, ALL_MANAGEMENT);
      const [x, y] = await Promise.all([
        request(t.http).delete(`/applications/${b.id}`).set('BT-API-KEY', a.key),
        request(t.http).delete(`/applications/${a.id}`).set('BT-API-KEY', b.key),
      ]);
      // One wins; the other is refused: 409 when it got past authentication first, else 401 (its
      // application, and so its key, is already gone).
      const [won, lost] = [x.status, y.status].sort();
      expect(won).toBe(204);
      expect([401, 409]).toContain(lost);
      const [{ n }] = await db.query(
        `SELECT count(*)::int AS n FROM applications WHERE tenant_id = $1
            AND 'application:create' = ANY(permissions) AND 'application:update' = ANY(permissions)`,
        [tenant.tenantId],
      );
      expect(n).toBe(1);
    }
  });

  it("another tenant cannot see, touch or delete this tenant's applications", async () => {
    const tenant = await newTenant(t, 'grants a');
    const other = await newTenant(t, 'grants b');
    for (const req of [
      request(t.http).get(`/applications/${tenant.managementApplicationId}`),
      request(t.http).delete(`/applications/${tenant.managementApplicationId}`),
      request(t.http).post(`/applications/${tenant.managementApplicationId}/keys`),
      request(t.http).put(`/applications/${tenant.managementApplicationId}`).send({ name: 'x' }),
    ]) {
      expectProblem(await req.set('BT-API-KEY', other.managementKey), 404);
    }
  });

  it('key creation, key deletion and application deletion at once in one tenant never deadlock (no 5xx)', async () => {
    const tenant = await newTenant(t, 'grants concurrency');
    const m = tenant.managementKey;
    const statuses: number[] = [];
    for (let round = 0; round < 8; round++) {
      const admin = await limited(tenant, ALL_MANAGEMENT);
      const rotate = async () => {
        const key = await request(t.http).post(`/applications/${admin.id}/keys`).set('BT-API-KEY', m);
        statuses.push(key.status);
        const revoked = await request(t.http)
          .delete(`/applications/${admin.id}/keys/${key.body.id}`)
          .set('BT-API-KEY', m);
        statuses.push(revoked.status);
      };
      const createAndDelete = async () => {
        const gone = await limited(tenant, ALL_MANAGEMENT);
        statuses.push((await request(t.http).delete(`/applications/${gone.id}`).set('BT-API-KEY', m)).status);
      };
      await Promise.all([
        rotate(),
        rotate(),
        rotate(),
        createAndDelete(),
        createAndDelete(),
        createAndDelete(),
      ]);
    }
    expect(statuses.filter((status) => status >= 500)).toEqual([]);
  });
});
