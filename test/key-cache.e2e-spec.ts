import request from 'supertest';
import { DataSource } from 'typeorm';
import { ChangeNotifications } from '../src/database/change-notifications';
import { ApplicationKeyResolver } from '../src/modules/applications/application-key.resolver';
import { ApplicationsRepository } from '../src/modules/applications/applications.repository';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { waitFor } from './support/wait';

/**
 * Keys are kept in memory while the instance listens for key changes; every change, on any instance,
 * is seen at once: a revoked key, a narrowed application, a deleted one (issue 21).
 */
describe('API keys cached in memory, invalidated across instances', () => {
  let a: TestApp;
  let b: TestApp;
  let lookups: jest.SpyInstance;

  const listening = async (t: TestApp, expected = true) => {
    const changes = t.app.get(ChangeNotifications);
    await waitFor(() => changes.listening === expected, {
      timeoutMs: 5000,
      intervalMs: 50,
      what: `the instance ${expected ? 'listening' : 'not listening'}`,
    });
  };

  /**
   * Runs `change` and waits until instance `t` has heard of it. A change made elsewhere reaches `t` as a
   * notification after the other instance's commit, a few milliseconds later: the assertion that follows
   * is about what `t` does once told, not a race against the notice on a loaded machine.
   */
  const heardBy = async (t: TestApp, change: () => Promise<unknown>) => {
    const resolver = t.app.get(ApplicationKeyResolver);
    const before = resolver.generation;
    await change();
    await waitFor(() => resolver.generation > before, { timeoutMs: 2000, what: 'the key change notice' });
  };

  beforeAll(async () => {
    a = await startApp();
    b = await startApp();
    await listening(a);
    await listening(b);
    lookups = jest.spyOn(ApplicationsRepository.prototype, 'findKeyHolder');
  });
  afterAll(async () => {
    lookups.mockRestore();
    await a.close();
    await b.close();
  });

  it('a key is looked up once, then served from memory', async () => {
    const tenant = await newTenant(a);
    const app = await newApplication(a, tenant.managementKey, {
      type: 'private',
      permissions: ['token:create'],
    });
    lookups.mockClear();
    for (let i = 0; i < 5; i++)
      await request(a.http)
        .post('/tokens')
        .set('BT-API-KEY', app.key)
        .send({ type: 'token', data: 'x' })
        .expect(201);
    expect(lookups).toHaveBeenCalledTimes(1);
  });

  it('a key revoked on one instance fails at once on both; a narrowed application likewise', async () => {
    const tenant = await newTenant(a);
    const app = await newApplication(a, tenant.managementKey, {
      type: 'private',
      permissions: ['token:create', 'token:read'],
    });
    const tokenize = (t: TestApp) =>
      request(t.http).post('/tokens').set('BT-API-KEY', app.key).send({ type: 'token', data: 'x' });
    await tokenize(a).expect(201);
    await tokenize(b).expect(201);

    // Narrowed on b: a answers with the new permissions at once.
    await heardBy(a, () =>
      request(b.http)
        .put(`/applications/${app.id}`)
        .set('BT-API-KEY', tenant.managementKey)
        .send({ name: 'narrowed', permissions: ['token:read'] })
        .expect(200),
    );
    await tokenize(a).expect(403);
    await tokenize(b).expect(403);

    // Its key revoked on a: both refuse it at once.
    const keys = await request(a.http)
      .get(`/applications/${app.id}/keys`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    const keyId = (keys.body as { id: string }[])[0].id;
    await request(a.http).get(`/tokens`).set('BT-API-KEY', app.key).expect(200);
    await request(b.http).get(`/tokens`).set('BT-API-KEY', app.key).expect(200);
    await heardBy(b, () =>
      request(a.http)
        .delete(`/applications/${app.id}/keys/${keyId}`)
        .set('BT-API-KEY', tenant.managementKey)
        .expect(204),
    );
    await request(b.http).get(`/tokens`).set('BT-API-KEY', app.key).expect(401);
    await request(a.http).get(`/tokens`).set('BT-API-KEY', app.key).expect(401);
  });

  it('a deleted application, and a change made with SQL alone, are seen at once', async () => {
    const tenant = await newTenant(a);
    const first = await newApplication(a, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    const second = await newApplication(a, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    for (const t of [a, b]) {
      await request(t.http).get('/tokens').set('BT-API-KEY', first.key).expect(200);
      await request(t.http).get('/tokens').set('BT-API-KEY', second.key).expect(200);
    }
    await heardBy(a, () =>
      request(b.http).delete(`/applications/${first.id}`).set('BT-API-KEY', tenant.managementKey).expect(204),
    );
    await request(a.http).get('/tokens').set('BT-API-KEY', first.key).expect(401);
    // An operator's statement, no API involved: the trigger announces it all the same.
    await heardBy(b, () =>
      a.app.get(DataSource).query(`UPDATE applications SET permissions = '{}' WHERE id = $1`, [second.id]),
    );
    await request(b.http).get('/tokens').set('BT-API-KEY', second.key).expect(403);
  });

  it('without its listening connection an instance asks the database every time, and listens again', async () => {
    const tenant = await newTenant(a);
    const app = await newApplication(a, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    await a.app.get(DataSource).query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE query = 'LISTEN vault_changes' AND pid <> pg_backend_pid()`,
    );
    await listening(a, false);
    lookups.mockClear();
    for (let i = 0; i < 3; i++) await request(a.http).get('/tokens').set('BT-API-KEY', app.key).expect(200);
    expect(lookups.mock.calls.length).toBeGreaterThanOrEqual(3);
    await listening(a, true);
    await listening(b, true);
  });
});
