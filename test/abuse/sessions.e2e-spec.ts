import request from 'supertest';
import { expectProblem, newApplication, TestApp, TestTenant } from '../support/app';
import { authorizedSession, cardData, luhnCard, tokenize, scene } from '../support/attacker';

/**
 * Abuse class: sessions outliving their grant (docs/reliability.md). A session's grants are checked at
 * every use against what its authorizing application holds then; deleting that application ends it.
 */
describe('abuse: sessions outliving their grant', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let pub: string;
  let owner: string;

  beforeAll(async () => {
    const s = await scene('sessions abuse', {
      pub: { type: 'public', permissions: ['token:create'] },
      owner: { type: 'private', permissions: ['token:create', 'token:read'] },
    });
    ({ t, tenant } = s);
    ({ pub, owner } = s.keys);
  });
  afterAll(() => t.close());

  const setPermissions = (id: string, body: Record<string, unknown>) =>
    request(t.http)
      .put(`/applications/${id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .send({ name: 'authorizer', ...body })
      .expect(200);
  const read = (key: string, id: string) => request(t.http).get(`/tokens/${id}`).set('BT-API-KEY', key);

  it('a session stops reading as soon as its authorizing application loses the permission, and resumes only if it is given back', async () => {
    const authorizer = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read'],
    });
    const token = (await tokenize(t, owner, { type: 'card', data: cardData(luhnCard()) }).expect(201)).body
      .id;
    const session = await authorizedSession(t, pub, authorizer.key, { permissions: ['token:read'] });
    await read(session, token).expect(200);

    await setPermissions(authorizer.id, { permissions: ['token:search'] });
    expectProblem(await read(session, token), 403);

    await setPermissions(authorizer.id, { permissions: ['token:read'] });
    await read(session, token).expect(200);
  });

  it('a rule-scoped session narrows with its authorizer: a rule over /pci/ reads nothing outside what the authorizer still holds', async () => {
    const authorizer = await newApplication(t, tenant.managementKey, {
      type: 'private',
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'] }],
    });
    const high = (await tokenize(t, owner, { type: 'card', data: cardData(luhnCard()) }).expect(201)).body.id;
    const low = (
      await tokenize(t, owner, {
        type: 'card',
        data: cardData(luhnCard()),
        containers: ['/pci/low/'],
      }).expect(201)
    ).body.id;
    const session = await authorizedSession(t, pub, authorizer.key, {
      rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'] }],
    });
    await read(session, high).expect(200);
    await read(session, low).expect(200);

    await setPermissions(authorizer.id, {
      rules: [{ priority: 1, container: '/pci/low/', permissions: ['token:read'] }],
    });
    // Checked as at authorization: a session rule over /pci/ needs token:read on the whole of /pci/,
    // which the authorizer no longer holds, so the rule grants nothing now (not even below /pci/low/).
    for (const id of [high, low]) expect([403, 404]).toContain((await read(session, id)).status);
    // Holding token:read through no rule at all now, the session may not even list.
    expectProblem(await request(t.http).get('/tokens').set('BT-API-KEY', session), 403);

    // A session authorized within what the authorizer holds now works.
    const narrow = await authorizedSession(t, pub, authorizer.key, {
      rules: [{ priority: 1, container: '/pci/low/', permissions: ['token:read'] }],
    });
    await read(narrow, low).expect(200);
    expect([403, 404]).toContain((await read(narrow, high)).status);
  });

  it('deleting the authorizing application ends its sessions (401)', async () => {
    const authorizer = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['token:read', 'token:create'],
    });
    const token = (await tokenize(t, owner, { type: 'card', data: cardData(luhnCard()) }).expect(201)).body
      .id;
    const session = await authorizedSession(t, pub, authorizer.key, {
      permissions: ['token:read', 'token:create'],
    });
    await read(session, token).expect(200);
    await request(t.http)
      .delete(`/applications/${authorizer.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(204);
    expectProblem(await read(session, token), 401);
    expectProblem(await tokenize(t, session, { type: 'card', data: cardData(luhnCard()) }), 401);
  });

  it('deleting the public application that created it ends the session too', async () => {
    const creator = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const token = (await tokenize(t, owner, { type: 'card', data: cardData(luhnCard()) }).expect(201)).body
      .id;
    const session = await authorizedSession(t, creator.key, owner, { permissions: ['token:read'] });
    await read(session, token).expect(200);
    await request(t.http)
      .delete(`/applications/${creator.id}`)
      .set('BT-API-KEY', tenant.managementKey)
      .expect(204);
    expectProblem(await read(session, token), 401);
  });
});
