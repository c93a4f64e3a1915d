import request from 'supertest';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';

describe('API keys and permissions', () => {
  let t: TestApp;
  let tenant: TestTenant;

  beforeAll(async () => {
    t = await startApp();
    tenant = await newTenant(t);
  });
  afterAll(() => t.close());

  describe('401', () => {
    it('rejects a request without BT-API-KEY', async () => {
      const res = await request(t.http).get('/applications');
      expectProblem(res, 401);
      expect(res.body.detail).toMatch(/BT-API-KEY/);
    });

    it('rejects a key that is not of this service', async () => {
      expectProblem(await request(t.http).get('/applications').set('BT-API-KEY', 'not-a-key'), 401);
    });

    it('rejects a well-formed key that does not exist', async () => {
      const unknown = `key_mgt_${'A'.repeat(43)}`;
      expectProblem(await request(t.http).get('/applications').set('BT-API-KEY', unknown), 401);
    });

    it('rejects a key whose prefix does not match its application type', async () => {
      const swapped = tenant.managementKey.replace('key_mgt_', 'key_pvt_');
      expectProblem(await request(t.http).get('/applications/key').set('BT-API-KEY', swapped), 401);
    });

    it('rejects a session key until sessions exist for it', async () => {
      expectProblem(
        await request(t.http)
          .get('/applications/key')
          .set('BT-API-KEY', `key_ses_${'b'.repeat(43)}`),
        401,
      );
    });

    it('rejects a revoked key at once, while the application other keys keep working', async () => {
      const app = await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:read'],
      });
      const second = await request(t.http)
        .post(`/applications/${app.id}/keys`)
        .set('BT-API-KEY', tenant.managementKey)
        .expect(201);
      const firstKeyId = (app.body.keys as { id: string }[])[0].id;
      await request(t.http)
        .delete(`/applications/${app.id}/keys/${firstKeyId}`)
        .set('BT-API-KEY', tenant.managementKey)
        .expect(204);
      expectProblem(await request(t.http).get('/applications/key').set('BT-API-KEY', app.key), 401);
      await request(t.http).get('/applications/key').set('BT-API-KEY', second.body.key).expect(200);
    });

    it('rejects every key of a deleted application', async () => {
      const app = await newApplication(t, tenant.managementKey, {
        type: 'public',
        permissions: ['token:create'],
      });
      await request(t.http)
        .delete(`/applications/${app.id}`)
        .set('BT-API-KEY', tenant.managementKey)
        .expect(204);
      expectProblem(await request(t.http).get('/applications/key').set('BT-API-KEY', app.key), 401);
    });
  });

  describe('403', () => {
    it('refuses a key whose application lacks the permission', async () => {
      const pvt = await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:read'],
      });
      const res = await request(t.http).get('/applications').set('BT-API-KEY', pvt.key);
      expectProblem(res, 403);
      expect(res.body.detail).toContain('application:read');
      expectProblem(await request(t.http).get('/tenants/self').set('BT-API-KEY', pvt.key), 403);
    });

    it('refuses a management application created without the permission', async () => {
      const mgt = await newApplication(t, tenant.managementKey, {
        type: 'management',
        permissions: ['application:read'],
      });
      await request(t.http).get('/applications').set('BT-API-KEY', mgt.key).expect(200);
      expectProblem(
        await request(t.http)
          .post('/applications')
          .set('BT-API-KEY', mgt.key)
          .send({ name: 'x', type: 'public' }),
        403,
      );
      expectProblem(await request(t.http).get('/tenants/self').set('BT-API-KEY', mgt.key), 403);
    });

    it('refuses a public key on management routes', async () => {
      const pub = await newApplication(t, tenant.managementKey, {
        type: 'public',
        permissions: ['token:create'],
      });
      expectProblem(await request(t.http).delete(`/applications/${pub.id}`).set('BT-API-KEY', pub.key), 403);
    });
  });

  describe('any valid key', () => {
    it('GET /applications/key returns the calling application, without clear keys', async () => {
      const pub = await newApplication(t, tenant.managementKey, {
        type: 'public',
        permissions: ['token:create'],
      });
      const res = await request(t.http).get('/applications/key').set('BT-API-KEY', pub.key).expect(200);
      expect(res.body).toMatchObject({ id: pub.id, type: 'public', tenant_id: tenant.tenantId });
      expect(res.body.key).toBeUndefined();
      expect(JSON.stringify(res.body)).not.toContain(pub.key);
    });

    it('GET /permissions lists the catalog and filters by application type', async () => {
      const pub = await newApplication(t, tenant.managementKey, {
        type: 'public',
        permissions: ['token:create'],
      });
      const all = await request(t.http).get('/permissions').set('BT-API-KEY', pub.key).expect(200);
      // The catalog of docs/permissions.md: 19, plus proxy:*, webhook:*, orchestration:flows:*,
      // orchestration:buyers:*, wallet:manage, orchestration:relay and token:import.
      expect(all.body).toHaveLength(36);
      expect(all.body).toContainEqual({
        type: 'token:create',
        description: expect.any(String),
        application_types: ['public', 'private'],
      });
      const mgt = await request(t.http)
        .get('/permissions?application_type=management')
        .set('BT-API-KEY', pub.key)
        .expect(200);
      expect(mgt.body.map((p: { type: string }) => p.type).sort()).toEqual(
        [
          'application:create',
          'application:delete',
          'application:read',
          'application:update',
          'log:read',
          'tenant:read',
          'token:import',
          'orchestration:flows:read',
          'orchestration:flows:update',
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
        ].sort(),
      );
      const bad = await request(t.http).get('/permissions?application_type=robot').set('BT-API-KEY', pub.key);
      expectProblem(bad, 400);
      expect(bad.body.errors).toHaveProperty('application_type');
    });

    it('GET /tenants/self returns the tenant of the management key', async () => {
      const res = await request(t.http)
        .get('/tenants/self')
        .set('BT-API-KEY', tenant.managementKey)
        .expect(200);
      expect(res.body).toEqual({ id: tenant.tenantId, name: 'test tenant', created_at: expect.any(String) });
    });
  });

  it('key rotation: old and new keys both work until the old one is deleted', async () => {
    const app = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    const rotated = await request(t.http)
      .post(`/applications/${app.id}/keys`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(201);
    expect(rotated.body).toEqual({
      id: expect.any(String),
      key: expect.stringMatching(/^key_pvt_[0-9A-Za-z]+$/),
      created_by: tenant.managementApplicationId,
      created_at: expect.any(String),
    });
    await request(t.http).get('/applications/key').set('BT-API-KEY', app.key).expect(200);
    await request(t.http).get('/applications/key').set('BT-API-KEY', rotated.body.key).expect(200);

    const keys = await request(t.http)
      .get(`/applications/${app.id}/keys`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(keys.body).toHaveLength(2);
    for (const key of keys.body) expect(key.key).toBeUndefined();

    const oldId = (app.body.keys as { id: string }[])[0].id;
    await request(t.http)
      .delete(`/applications/${app.id}/keys/${oldId}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(204);
    expectProblem(await request(t.http).get('/applications/key').set('BT-API-KEY', app.key), 401);
    await request(t.http).get('/applications/key').set('BT-API-KEY', rotated.body.key).expect(200);
    expectProblem(
      await request(t.http)
        .delete(`/applications/${app.id}/keys/${oldId}`)
        .set('BT-API-KEY', tenant.managementKey),
      404,
    );
  });
});
