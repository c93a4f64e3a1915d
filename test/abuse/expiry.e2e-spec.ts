import { DataSource } from 'typeorm';
import { expectProblem, newApplication, TestApp, TestTenant } from '../support/app';
import { authorizedSession, cardData, luhnCard, patchToken, tokenize, scene } from '../support/attacker';

/**
 * Abuse class: expiry (docs/reliability.md). `expires_at` a second ahead is a delete in effect, so
 * adding one or moving it earlier needs `token:delete` on the token; `token:update` alone may only move
 * it later or remove it.
 */
describe('abuse: expiry as a delete', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let owner: string;
  let updater: string;
  let pub: string;
  let deleter: string;

  beforeAll(async () => {
    const s = await scene('expiry', {
      owner: { type: 'private', permissions: ['token:create', 'token:read', 'token:delete'] },
      updater: { type: 'private', permissions: ['token:read', 'token:update'] },
      pub: { type: 'public', permissions: ['token:create', 'token:update'] },
      deleter: { type: 'private', permissions: ['token:update', 'token:delete'] },
    });
    ({ t, db, tenant } = s);
    ({ owner, updater, pub, deleter } = s.keys);
  });
  afterAll(() => t.close());

  const in_ = (ms: number) => new Date(Date.now() + ms).toISOString();
  /**
   * An expiry that deletes the token soon: a minute, not a second, so that a slow request never finds it
   * already past (a 400 for the date) where the test asks for the 403 of the permission.
   */
  const SOON = 60_000;
  const expiresAt = async (id: string): Promise<string | null> => {
    const [row] = await db.query('SELECT expires_at FROM tokens WHERE id = $1', [id]);
    return row.expires_at ? (row.expires_at as Date).toISOString() : null;
  };
  const victim = async (expires?: string) =>
    (
      await tokenize(t, owner, {
        type: 'card',
        data: cardData(luhnCard()),
        ...(expires ? { expires_at: expires } : {}),
      }).expect(201)
    ).body.id as string;

  it('token:update alone cannot give a token an expiry (public key, private key, session)', async () => {
    const id = await victim();
    const session = await authorizedSession(t, pub, updater, { permissions: ['token:update'] });
    for (const key of [pub, updater, session]) {
      const res = await patchToken(t, key, id, { expires_at: in_(SOON) });
      expectProblem(res, 403);
      expect(res.body.detail).toMatch(/token:delete/);
    }
    expect(await expiresAt(id)).toBeNull();
  });

  it('token:update alone cannot move an expiry earlier, but may move it later or remove it', async () => {
    const first = in_(86_400_000);
    const id = await victim(first);
    expectProblem(await patchToken(t, updater, id, { expires_at: in_(SOON) }), 403);
    expect(await expiresAt(id)).toBe(first);
    const later = in_(2 * 86_400_000);
    await patchToken(t, updater, id, { expires_at: later }).expect(200);
    expect(await expiresAt(id)).toBe(later);
    await patchToken(t, pub, id, { expires_at: null }).expect(200);
    expect(await expiresAt(id)).toBeNull();
  });

  it('token:delete (flat or through a rule covering the token) allows it', async () => {
    const id = await victim();
    const soon = in_(60_000);
    await patchToken(t, deleter, id, { expires_at: soon }).expect(200);
    expect(await expiresAt(id)).toBe(soon);

    const ruled = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        rules: [
          { priority: 1, container: '/pci/low/', permissions: ['token:update', 'token:delete'] },
          { priority: 2, container: '/pci/', permissions: ['token:update'] },
        ],
      })
    ).key;
    const other = await victim();
    expectProblem(await patchToken(t, ruled, other, { expires_at: in_(60_000) }), 403);
    expect(await expiresAt(other)).toBeNull();
    const low = (
      await tokenize(t, owner, {
        type: 'card',
        data: cardData(luhnCard()),
        containers: ['/pci/low/'],
      }).expect(201)
    ).body.id as string;
    await patchToken(t, ruled, low, { expires_at: in_(60_000) }).expect(200);
  });
});
