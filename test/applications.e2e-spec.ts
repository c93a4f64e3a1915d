import request from 'supertest';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';

describe('applications', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let other: TestTenant;

  beforeAll(async () => {
    t = await startApp();
    tenant = await newTenant(t, 'first');
    other = await newTenant(t, 'second');
  });
  afterAll(() => t.close());

  const post = (key: string, body: unknown) =>
    request(t.http)
      .post('/applications')
      .set('BT-API-KEY', key)
      .send(body as object);

  it('creates an application with its first key shown once', async () => {
    const res = await post(tenant.managementKey, {
      name: 'Checkout',
      type: 'private',
      permissions: ['token:read', 'token:use'],
      rules: [
        {
          description: 'cards',
          priority: 1,
          container: '/pci/',
          permissions: ['token:read'],
          transform: 'redact',
        },
      ],
    }).expect(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      tenant_id: tenant.tenantId,
      name: 'Checkout',
      type: 'private',
      permissions: ['token:read', 'token:use'],
      rules: [
        {
          description: 'cards',
          priority: 1,
          container: '/pci/',
          permissions: ['token:read'],
          transform: 'redact',
        },
      ],
      key: expect.stringMatching(/^key_pvt_[0-9A-Za-z]{40,50}$/),
      keys: [
        {
          id: expect.any(String),
          key: res.body.key,
          created_by: tenant.managementApplicationId,
          created_at: expect.any(String),
        },
      ],
      created_by: tenant.managementApplicationId,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      modified_by: null,
      modified_at: null,
    });
    const got = await request(t.http)
      .get(`/applications/${res.body.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(got.body.key).toBeUndefined();
    expect(got.body.keys).toEqual([
      {
        id: res.body.keys[0].id,
        created_by: tenant.managementApplicationId,
        created_at: res.body.keys[0].created_at,
      },
    ]);
  });

  it('creates an application without a key when create_key is false', async () => {
    const res = await post(tenant.managementKey, {
      name: 'keyless',
      type: 'public',
      create_key: false,
    }).expect(201);
    expect(res.body.key).toBeUndefined();
    expect(res.body.keys).toEqual([]);
  });

  describe('validation', () => {
    it.each([
      [{ type: 'private' }, 'name'],
      [{ name: '', type: 'private' }, 'name'],
      [{ name: 'x'.repeat(201), type: 'private' }, 'name'],
      [{ name: 'x', type: 'robot' }, 'type'],
      [{ name: 'x', type: 'private', permissions: 'token:read' }, 'permissions'],
      [{ name: 'x', type: 'private', unknown_field: 1 }, 'unknown_field'],
      [{ name: 'x', type: 'private', create_key: 'yes' }, 'create_key'],
    ])('rejects %j naming %s', async (body, field) => {
      const res = await post(tenant.managementKey, body);
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toContain(field);
    });

    it('rejects permissions not allowed for the application type, by path', async () => {
      const res = await post(tenant.managementKey, {
        name: 'x',
        type: 'public',
        permissions: ['token:create', 'token:read', 'nope:nope'],
      });
      expectProblem(res, 400);
      expect(res.body.errors).toEqual({
        'permissions[1]': ['permission token:read is not allowed for public applications'],
        'permissions[2]': ['unknown permission nope:nope'],
      });
      const mgt = await post(tenant.managementKey, {
        name: 'x',
        type: 'management',
        permissions: ['token:create'],
      });
      expectProblem(mgt, 400);
      expect(mgt.body.errors).toHaveProperty(['permissions[0]']);
      const pvt = await post(tenant.managementKey, { name: 'x', type: 'private', permissions: ['log:read'] });
      expect(pvt.body.errors).toHaveProperty(['permissions[0]']);
    });

    it('rejects bad rules, each by path', async () => {
      const res = await post(tenant.managementKey, {
        name: 'x',
        type: 'private',
        rules: [
          { priority: 1, container: '/pci/', permissions: ['application:read'] },
          { priority: 1, container: '/general/', permissions: ['token:read'] },
          { priority: 2, container: 'no-slashes', permissions: ['token:read'] },
          { priority: 3, container: '/pci/', permissions: ['token:read'], transform: 'unmask' },
          {
            priority: 4,
            conditions: [{ attribute: 'id', operator: 'equals', value: 'x' }],
            permissions: ['token:read'],
          },
          { priority: 5, permissions: ['token:read'] },
        ],
      });
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors).sort()).toEqual(
        ['rules[2].container', 'rules[3].transform'].sort(),
      );
      // Shape errors come first; once the shapes are right the grants are checked.
      const grants = await post(tenant.managementKey, {
        name: 'x',
        type: 'private',
        rules: [
          { priority: 1, container: '/pci/', permissions: ['application:read'] },
          { priority: 1, container: '/general/', permissions: ['token:read'] },
          {
            priority: 4,
            conditions: [{ attribute: 'id', operator: 'equals', value: 'x' }],
            permissions: ['token:read'],
          },
          { priority: 5, permissions: ['token:read'] },
        ],
      });
      expectProblem(grants, 400);
      expect(Object.keys(grants.body.errors).sort()).toEqual(
        ['rules[0].permissions[0]', 'rules[1].priority', 'rules[2].conditions', 'rules[3]'].sort(),
      );
      expect(grants.body.errors['rules[3]']).toEqual(['a rule needs a container or conditions']);
    });

    it('accepts a reveal rule on private applications, refuses it on public and management ones by path', async () => {
      const revealRule = (permissions: string[]) => ({
        priority: 1,
        container: '/pci/',
        permissions,
        transform: 'reveal',
      });
      const pvt = await post(tenant.managementKey, {
        name: 'revealer',
        type: 'private',
        rules: [revealRule(['token:read'])],
      });
      expect(pvt.status).toBe(201);
      expect(pvt.body.rules).toEqual([revealRule(['token:read'])]);
      for (const [type, permission] of [
        ['public', 'token:create'],
        ['management', 'log:read'],
      ]) {
        const res = await post(tenant.managementKey, { name: 'x', type, rules: [revealRule([permission])] });
        expectProblem(res, 400);
        expect(res.body.errors).toEqual({
          'rules[0].transform': [`reveal is not allowed for ${type} applications`],
        });
      }
    });
  });

  describe('listing', () => {
    it('pages with page and size and filters by type', async () => {
      const lister = await newTenant(t, 'lister');
      for (const type of ['public', 'private', 'private']) {
        await newApplication(t, lister.managementKey, { type });
      }
      const page1 = await request(t.http)
        .get('/applications?size=2')
        .set('BT-API-KEY', lister.managementKey)
        .expect(200);
      expect(page1.body.pagination).toEqual({
        total_items: 4,
        page_number: 1,
        page_size: 2,
        total_pages: 2,
        after: expect.any(String),
      });
      expect(page1.body.data).toHaveLength(2);
      const page2 = await request(t.http)
        .get('/applications?size=2&page=2')
        .set('BT-API-KEY', lister.managementKey)
        .expect(200);
      expect(page2.body.data).toHaveLength(2);
      const ids = [...page1.body.data, ...page2.body.data].map((a: { id: string }) => a.id);
      expect(new Set(ids).size).toBe(4);
      const past = await request(t.http)
        .get('/applications?size=2&page=9')
        .set('BT-API-KEY', lister.managementKey)
        .expect(200);
      expect(past.body).toEqual({
        pagination: { total_items: 4, page_number: 9, page_size: 2, total_pages: 2 },
        data: [],
      });
      const privates = await request(t.http)
        .get('/applications?type=private')
        .set('BT-API-KEY', lister.managementKey)
        .expect(200);
      expect(privates.body.pagination.total_items).toBe(2);
      expect(privates.body.data.every((a: { type: string }) => a.type === 'private')).toBe(true);
      for (const app of [...page1.body.data, ...page2.body.data]) {
        expect(app.tenant_id).toBe(lister.tenantId);
        for (const key of app.keys) expect(key.key).toBeUndefined();
      }
    });

    it('defaults to page 1 of 20', async () => {
      const res = await request(t.http)
        .get('/applications')
        .set('BT-API-KEY', tenant.managementKey)
        .expect(200);
      expect(res.body.pagination).toMatchObject({ page_number: 1, page_size: 20 });
    });

    it.each(['size=0', 'size=101', 'page=0', 'page=-1', 'size=abc', 'page=1.5', 'type=robot', 'sort=name'])(
      'rejects %s with 400',
      async (query) => {
        const res = await request(t.http)
          .get(`/applications?${query}`)
          .set('BT-API-KEY', tenant.managementKey);
        expectProblem(res, 400);
        expect(Object.keys(res.body.errors)).toContain(query.split('=')[0]);
      },
    );
  });

  it('updates name, permissions and rules; keeps what is omitted', async () => {
    const app = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    const res = await request(t.http)
      .put(`/applications/${app.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .send({
        name: 'renamed',
        rules: [{ priority: 1, container: '/general/', permissions: ['token:search'] }],
      })
      .expect(200);
    expect(res.body).toMatchObject({
      name: 'renamed',
      permissions: ['token:read'],
      rules: [{ priority: 1, container: '/general/', permissions: ['token:search'] }],
      modified_by: tenant.managementApplicationId,
    });
    expect(res.body.modified_at).toEqual(expect.any(String));
    const bad = await request(t.http)
      .put(`/applications/${app.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'again', permissions: ['tenant:read'] });
    expectProblem(bad, 400);
    expect(bad.body.errors).toHaveProperty(['permissions[0]']);
    const unchanged = await request(t.http)
      .get(`/applications/${app.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(unchanged.body.name).toBe('renamed');
    expectProblem(
      await request(t.http).put(`/applications/${app.id}`).set('BT-API-KEY', tenant.managementKey).send({}),
      400,
    );
  });

  it('deletes an application: 204, then 404', async () => {
    const app = await newApplication(t, tenant.managementKey, { type: 'public' });
    await request(t.http)
      .delete(`/applications/${app.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(204);
    expectProblem(
      await request(t.http).get(`/applications/${app.id}`).set('BT-API-KEY', tenant.managementKey),
      404,
    );
    expectProblem(
      await request(t.http).delete(`/applications/${app.id}`).set('BT-API-KEY', tenant.managementKey),
      404,
    );
  });

  it('answers 404 for ids that are not uuids', async () => {
    expectProblem(
      await request(t.http).get('/applications/not-a-uuid').set('BT-API-KEY', tenant.managementKey),
      404,
    );
  });

  describe('another tenant', () => {
    let theirs: { id: string; key: string; body: Record<string, unknown> };
    beforeAll(async () => {
      theirs = await newApplication(t, other.managementKey, { type: 'private', permissions: ['token:read'] });
    });

    it('cannot see, change, delete or rotate keys of the application (404 everywhere)', async () => {
      const key = tenant.managementKey;
      const keyId = (theirs.body.keys as { id: string }[])[0].id;
      expectProblem(await request(t.http).get(`/applications/${theirs.id}`).set('BT-API-KEY', key), 404);
      expectProblem(
        await request(t.http).put(`/applications/${theirs.id}`).set('BT-API-KEY', key).send({ name: 'mine' }),
        404,
      );
      expectProblem(await request(t.http).get(`/applications/${theirs.id}/keys`).set('BT-API-KEY', key), 404);
      expectProblem(
        await request(t.http).post(`/applications/${theirs.id}/keys`).set('BT-API-KEY', key),
        404,
      );
      expectProblem(
        await request(t.http).delete(`/applications/${theirs.id}/keys/${keyId}`).set('BT-API-KEY', key),
        404,
      );
      expectProblem(await request(t.http).delete(`/applications/${theirs.id}`).set('BT-API-KEY', key), 404);
      // Still intact for its owner, and its key still works.
      const owned = await request(t.http)
        .get(`/applications/${theirs.id}`)
        .set('BT-API-KEY', other.managementKey)
        .expect(200);
      expect(owned.body.name).toBe('private app');
      expect(owned.body.keys).toHaveLength(1);
      await request(t.http).get('/applications/key').set('BT-API-KEY', theirs.key).expect(200);
    });

    it('never lists it', async () => {
      const res = await request(t.http)
        .get('/applications?size=100')
        .set('BT-API-KEY', tenant.managementKey)
        .expect(200);
      expect(res.body.data.map((a: { id: string }) => a.id)).not.toContain(theirs.id);
      expect(res.body.data.every((a: { tenant_id: string }) => a.tenant_id === tenant.tenantId)).toBe(true);
    });

    it('GET /tenants/self never shows the other tenant', async () => {
      const res = await request(t.http)
        .get('/tenants/self')
        .set('BT-API-KEY', other.managementKey)
        .expect(200);
      expect(res.body.id).toBe(other.tenantId);
    });
  });
});
