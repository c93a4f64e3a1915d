import request from 'supertest';
import { DataSource } from 'typeorm';
import { newApplication, newTenant, TestApp, TestTenant } from '../support/app';
import { authorizedSession, cardData, luhnCard, tokenize, scene } from '../support/attacker';

/**
 * Abuse class: deduplication (docs/reliability.md). `deduplicate_token` hands back an existing token
 * only to a caller that may read it (rules-aware) and only one in the same containers; otherwise it
 * creates a token of the caller's own. Concurrent identical requests create exactly one token.
 */
describe('abuse: deduplication', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let owner: string;
  let pub: string;

  beforeAll(async () => {
    const s = await scene('dedup', {
      owner: { type: 'private', permissions: ['token:create', 'token:read'] },
      pub: { type: 'public', permissions: ['token:create'] },
    });
    ({ t, db, tenant } = s);
    ({ owner, pub } = s.keys);
  });
  afterAll(() => t.close());

  const victimCard = async (number: string) =>
    (
      await tokenize(t, owner, {
        type: 'card',
        data: cardData(number),
        deduplicate_token: true,
        metadata: { owner: 'victim-metadata-91' },
      }).expect(201)
    ).body as { id: string };

  const tokensOf = async (number: string): Promise<number> => {
    const fingerprint = (
      await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', owner)
        .send({ type: 'card', data: cardData(number), deduplicate_token: true })
        .expect(201)
    ).body.fingerprint as string;
    const [{ n }] = await db.query(
      'SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1 AND fingerprint = $2',
      [tenant.tenantId, fingerprint],
    );
    return n as number;
  };

  it('a public key (no token:read) never gets the existing token: it gets a new one, without the victim metadata', async () => {
    const number = luhnCard();
    const victim = await victimCard(number);
    const res = await tokenize(t, pub, {
      type: 'card',
      data: cardData(number),
      deduplicate_token: true,
    }).expect(201);
    expect(res.body.id).not.toBe(victim.id);
    expect(res.text).not.toContain('victim-metadata-91');
    expect(res.body.created_by).not.toBe(victim.id);
    // Inside a composite body as well.
    const composite = await tokenize(t, pub, {
      card: { type: 'card', data: cardData(number), deduplicate_token: true },
    }).expect(201);
    expect(composite.body.card.id).not.toBe(victim.id);
    expect(composite.text).not.toContain('victim-metadata-91');
  });

  it('a key or session reading only another container gets a new token', async () => {
    const number = luhnCard();
    const victim = await victimCard(number);
    const scoped = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        rules: [
          { priority: 1, container: '/pci/low/', permissions: ['token:create', 'token:read'] },
          { priority: 2, container: '/pci/high/', permissions: ['token:create'] },
        ],
      })
    ).key;
    for (const containers of [['/pci/low/'], ['/pci/high/']]) {
      const res = await tokenize(t, scoped, {
        type: 'card',
        data: cardData(number),
        containers,
        deduplicate_token: true,
      }).expect(201);
      expect(res.body.id).not.toBe(victim.id);
      expect(res.text).not.toContain('victim-metadata-91');
    }
    const reader = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
    ).key;
    const session = await authorizedSession(t, pub, reader, {
      rules: [{ priority: 1, container: '/pci/low/', permissions: ['token:create', 'token:read'] }],
    });
    const bySession = await tokenize(t, session, {
      type: 'card',
      data: cardData(number),
      containers: ['/pci/low/'],
      deduplicate_token: true,
    }).expect(201);
    expect(bySession.body.id).not.toBe(victim.id);
  });

  it('returns the existing token only in the same containers, to a caller that may read it', async () => {
    const number = luhnCard();
    const victim = await victimCard(number);
    const reader = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
    ).key;
    const same = await tokenize(t, reader, {
      type: 'card',
      data: cardData(number),
      deduplicate_token: true,
    }).expect(201);
    expect(same.body.id).toBe(victim.id);
    const elsewhere = await tokenize(t, reader, {
      type: 'card',
      data: cardData(number),
      containers: ['/pci/high/', '/pci/other/'],
      deduplicate_token: true,
    }).expect(201);
    expect(elsewhere.body.id).not.toBe(victim.id);
  });

  it("another tenant never gets this tenant's token", async () => {
    const number = luhnCard();
    const victim = await victimCard(number);
    const other = await newTenant(t, 'dedup other');
    const outsider = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
    ).key;
    const res = await tokenize(t, outsider, {
      type: 'card',
      data: cardData(number),
      deduplicate_token: true,
    }).expect(201);
    expect(res.body.id).not.toBe(victim.id);
    expect(res.body.tenant_id).toBe(other.tenantId);
  });

  it('20 concurrent identical requests create exactly one token', async () => {
    for (let round = 0; round < 3; round++) {
      const number = luhnCard();
      const responses = await Promise.all(
        Array.from({ length: 20 }, () =>
          tokenize(t, owner, { type: 'card', data: cardData(number), deduplicate_token: true }),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(20).fill(201));
      expect(new Set(responses.map((r) => r.body.id)).size).toBe(1);
      expect(await tokensOf(number)).toBe(1);
    }
  });
});
