import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';

const SHOP = 'https://shop.example';
const LOCAL = 'http://127.0.0.1:8080';
const frame = (applicationId: string, element = 'card') =>
  `/elements/v1/frame.html?application_id=${applicationId}&element=${element}`;

/**
 * The server side of the card elements (docs/elements.md): public applications' `allowed_origins`, the one
 * Content-Security-Policy of each frame (embeddable only by those origins), and the browser scripts served
 * to pages of any origin. The browser's side of it: test/elements.e2e-spec.ts.
 */
describe('card elements: allowed origins and what the service serves', () => {
  let t: TestApp;
  let tenant: TestTenant;

  beforeAll(async () => {
    t = await startApp();
    tenant = await newTenant(t, 'elements');
  });
  afterAll(() => t.close());

  const create = (body: Record<string, unknown>) =>
    request(t.http).post('/applications').set('BT-API-KEY', tenant.managementKey).send(body);
  const update = (id: string, body: Record<string, unknown>) =>
    request(t.http).put(`/applications/${id}`).set('BT-API-KEY', tenant.managementKey).send(body);
  const csp = (res: request.Response): string => res.headers['content-security-policy'];

  it('a public application takes allowed_origins on create and update, keeps them when left out, and shows them', async () => {
    const created = await create({
      name: 'checkout',
      type: 'public',
      permissions: ['token:create'],
      allowed_origins: [SHOP, LOCAL, SHOP],
    }).expect(201);
    expect(created.body.allowed_origins).toEqual([SHOP, LOCAL]);
    const id = created.body.id as string;
    const kept = await update(id, { name: 'checkout, renamed' }).expect(200);
    expect(kept.body.allowed_origins).toEqual([SHOP, LOCAL]);
    const replaced = await update(id, { name: 'checkout', allowed_origins: [LOCAL] }).expect(200);
    expect(replaced.body.allowed_origins).toEqual([LOCAL]);
    const read = await request(t.http).get(`/applications/${id}`).set('BT-API-KEY', tenant.managementKey);
    expect(read.body.allowed_origins).toEqual([LOCAL]);
    // The public key reads its own application, origins included.
    const own = await request(t.http)
      .get('/applications/key')
      .set('BT-API-KEY', created.body.key)
      .expect(200);
    expect(own.body.allowed_origins).toEqual([LOCAL]);
    const none = await create({ name: 'no origins', type: 'public', permissions: ['token:create'] }).expect(
      201,
    );
    expect(none.body.allowed_origins).toEqual([]);
  });

  it('names each origin that is not one; other application types refuse the field; nothing is written', async () => {
    const db = t.app.get(DataSource);
    const count = async () => Number((await db.query(`SELECT count(*) AS n FROM applications`))[0].n);
    const before = await count();
    const bad = await create({
      name: 'bad',
      type: 'public',
      permissions: ['token:create'],
      allowed_origins: [SHOP, 'https://shop.example/checkout', '*', 'javascript:alert(1)'],
    });
    expectProblem(bad, 400);
    expect(Object.keys(bad.body.errors).sort()).toEqual([
      'allowed_origins[1]',
      'allowed_origins[2]',
      'allowed_origins[3]',
    ]);
    expect(JSON.stringify(bad.body)).not.toContain('javascript:alert');
    const tooMany = await create({
      name: 'many',
      type: 'public',
      allowed_origins: Array.from({ length: 21 }, (_, i) => `https://s${i}.example`),
    });
    expectProblem(tooMany, 400);
    expect(Object.keys(tooMany.body.errors)).toEqual(['allowed_origins']);
    for (const type of ['private', 'management']) {
      const res = await create({ name: type, type, allowed_origins: [SHOP] });
      expectProblem(res, 400);
      expect(Object.keys(res.body.errors)).toEqual(['allowed_origins']);
    }
    expect(await count()).toBe(before);
    const pvt = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    const refused = await update(pvt.id, { name: 'private', allowed_origins: [] });
    expectProblem(refused, 400);
    expect(Object.keys(refused.body.errors)).toEqual(['allowed_origins']);
  });

  it("a frame's one Content-Security-Policy lets exactly the application's origins embed it, and nothing else in", async () => {
    const app = await create({
      name: 'embeddable',
      type: 'public',
      permissions: ['token:create'],
      allowed_origins: [SHOP, LOCAL],
    }).expect(201);
    for (const element of [
      'card',
      'cardNumber',
      'cardExpirationDate',
      'cardVerificationCode',
      'controller',
    ]) {
      const res = await request(t.http).get(frame(app.body.id, element)).expect(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(csp(res)).toBe(
        `default-src 'none'; script-src 'self'; connect-src 'self'; frame-ancestors ${SHOP} ${LOCAL}; ` +
          "base-uri 'none'; form-action 'none'",
      );
      expect(res.headers['x-frame-options']).toBeUndefined();
      expect(res.text).toContain(`<meta name="vault-element" content="${element}">`);
      expect(res.text).toContain(`<meta name="vault-allowed-origins" content="${SHOP} ${LOCAL}">`);
      // No inline script: the only script is the service's own file.
      expect(res.text.match(/<script/g)).toHaveLength(1);
      expect(res.text).toContain('<script src="/elements/v1/frame.js" defer></script>');
    }
    // The exact value above is the whole header: helmet's policy is not sent besides (it would be joined in).
  });

  it("an application with no origins, an unknown id, another type's id or no id: embeddable nowhere", async () => {
    const none = await create({ name: 'nowhere', type: 'public', permissions: ['token:create'] }).expect(201);
    const pvt = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    for (const id of [none.body.id, pvt.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid', '']) {
      const res = await request(t.http).get(frame(id)).expect(200);
      expect(csp(res)).toContain("frame-ancestors 'none'");
      expect(res.text).toContain('<meta name="vault-allowed-origins" content="">');
    }
    expectProblem(await request(t.http).get(frame(none.body.id, 'password')), 404);
    expectProblem(await request(t.http).get('/elements/v1/frame.html'), 404);
  });

  it('serves the browser scripts to pages of any origin, without a key', async () => {
    for (const file of ['elements.js', 'elements.mjs', 'frame.js']) {
      const res = await request(t.http).get(`/elements/v1/${file}`).set('Origin', SHOP).expect(200);
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(res.headers['cache-control']).toBe('public, max-age=300');
      expect(res.headers['cross-origin-resource-policy']).toBe('cross-origin');
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.text.length).toBeGreaterThan(100);
    }
    const types = await request(t.http).get('/elements/v1/elements.d.ts').expect(200);
    expect(types.text).toContain('VaultElements');
    for (const path of [
      '/elements/v1/other.js',
      '/elements/v1/..%2Fpackage.json',
      '/elements/v2/elements.js',
    ])
      expectProblem(await request(t.http).get(path), 404);
  });
});
