import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, newApplication, newTenant, TestApp, TestTenant } from '../support/app';
import { authorizedSession, cardData, luhnCard, patchToken, tokenize, scene } from '../support/attacker';

/**
 * Abuse class: evaluation over stored data (docs/reliability.md). Re-keying a stored card's
 * `fingerprint_expression` or `search_indexes` and comparing the result with tokens the attacker made
 * itself is an oracle on the hidden digits. A PATCH that changes either needs the rule deciding
 * `token:read` for the token to carry `reveal` (docs/access-rules.md): a key that may read the data in clear
 * learns nothing from a fingerprint. Every other key, flat permissions included, gets a 403.
 */
describe('abuse: evaluation over stored data', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let owner: string;
  let attacker: string;
  let pub: string;
  let pvtAll: string;

  beforeAll(async () => {
    const s = await scene('oracle', {
      owner: { type: 'private', permissions: ['token:create', 'token:read'] },
      attacker: {
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:update', 'token:search'],
      },
      pub: { type: 'public', permissions: ['token:create', 'token:update'] },
      pvtAll: {
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search'],
      },
    });
    ({ t, db, tenant } = s);
    ({ owner, attacker, pub, pvtAll } = s.keys);
  });
  afterAll(() => t.close());

  const stored = async (id: string) =>
    (
      await db.query(
        `SELECT fingerprint, fingerprint_expression, search_indexes,
                (SELECT count(*)::int FROM token_search_indexes s WHERE s.token_id = t.id) AS digests
           FROM tokens t WHERE id = $1`,
        [id],
      )
    )[0] as {
      fingerprint: string;
      fingerprint_expression: string;
      search_indexes: string[] | null;
      digests: number;
    };

  it('the digit-by-digit fingerprint oracle finds nothing: re-keying a stored card is a 403 and changes nothing', async () => {
    const number = luhnCard();
    const victim = await tokenize(t, owner, { type: 'card', data: cardData(number) }).expect(201);
    const before = await stored(victim.body.id);

    // The attack: make the stored card fingerprint its first digit, then compare with fingerprints of
    // tokens the attacker made itself whose expression yields one candidate digit each.
    const patched = await patchToken(t, attacker, victim.body.id, {
      fingerprint_expression: '{{ data.number | slice: 0, 1 }}',
    });
    expectProblem(patched, 403);
    expect(patched.text).not.toContain(number);
    const candidates = await Promise.all(
      Array.from({ length: 10 }, (_, digit) =>
        tokenize(t, attacker, { type: 'token', data: String(digit), fingerprint_expression: '{{ data }}' }),
      ),
    );
    const read = await request(t.http)
      .get(`/tokens/${victim.body.id}`)
      .set('BT-API-KEY', attacker)
      .expect(200);
    const matches = candidates.filter((c) => c.body.fingerprint === read.body.fingerprint);
    expect(matches).toHaveLength(0);
    expect(await stored(victim.body.id)).toEqual(before);
  });

  it('re-keying search indexes and searching by a guessed value is refused the same way', async () => {
    const number = luhnCard();
    const victim = await tokenize(t, owner, { type: 'card', data: cardData(number) }).expect(201);
    const before = await stored(victim.body.id);
    for (const indexes of [['{{ data.number | slice: 0, 1 }}'], ['{{ data.number | slice: 6, 6 }}']]) {
      expectProblem(await patchToken(t, attacker, victim.body.id, { search_indexes: indexes }), 403);
    }
    const search = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', attacker)
      .send({ query: `data:${number[0]}` })
      .expect(200);
    expect(search.body.data.map((x: { id: string }) => x.id)).not.toContain(victim.body.id);
    expect(await stored(victim.body.id)).toEqual(before);
  });

  it('refuses the re-keying to every kind of key without reveal: public, private with all token permissions, a session, a rule-scoped key', async () => {
    const victim = await tokenize(t, owner, { type: 'card', data: cardData(luhnCard()) }).expect(201);
    const before = await stored(victim.body.id);
    const scoped = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        rules: [
          {
            priority: 1,
            container: '/pci/',
            permissions: ['token:read', 'token:update', 'token:create'],
            transform: 'mask',
          },
        ],
      })
    ).key;
    const session = await authorizedSession(t, pub, pvtAll, {
      permissions: ['token:read', 'token:update'],
    });
    for (const key of [pub, pvtAll, scoped, session]) {
      for (const body of [
        { fingerprint_expression: '{{ data.number | last4 }}' },
        { search_indexes: ['{{ data.number }}'] },
      ]) {
        const res = await patchToken(t, key, victim.body.id, body);
        expectProblem(res, 403);
        expect(res.body.detail).toMatch(/reveal/);
      }
    }
    expect(await stored(victim.body.id)).toEqual(before);
  });

  it('still updates metadata, and accepts a PATCH that leaves the expressions as they are', async () => {
    const victim = await tokenize(t, owner, {
      type: 'card',
      data: cardData(luhnCard()),
      search_indexes: ['{{ data.number | last4 }}'],
    }).expect(201);
    const before = await stored(victim.body.id);
    const res = await patchToken(t, attacker, victim.body.id, {
      metadata: { note: 'ok' },
      fingerprint_expression: before.fingerprint_expression,
      search_indexes: before.search_indexes,
    }).expect(200);
    expect(res.body.metadata).toEqual({ note: 'ok' });
    expect(await stored(victim.body.id)).toEqual(before);
  });

  it('another tenant gets 404 for the same PATCH and learns nothing', async () => {
    const victim = await tokenize(t, owner, { type: 'card', data: cardData(luhnCard()) }).expect(201);
    const other = await newTenant(t, 'oracle other');
    const outsider = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:update'],
      })
    ).key;
    expectProblem(
      await patchToken(t, outsider, victim.body.id, { fingerprint_expression: '{{ data.number }}' }),
      404,
    );
  });

  it('with a reveal rule deciding token:read the expressions are recomputed over the stored data, and errors still carry no data', async () => {
    const number = luhnCard();
    const victim = await tokenize(t, owner, { type: 'card', data: cardData(number) }).expect(201);
    const revealer = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        rules: [
          {
            priority: 1,
            container: '/pci/',
            permissions: ['token:read', 'token:update'],
            transform: 'reveal',
          },
        ],
      })
    ).key;
    const updated = await patchToken(t, revealer, victim.body.id, {
      fingerprint_expression: '{{ data.number | slice: 0, 6 }}',
      search_indexes: ['{{ data.number | last4 }}'],
    }).expect(200);
    const twin = await tokenize(t, owner, {
      type: 'token',
      data: number.slice(0, 6),
      fingerprint_expression: '{{ data }}',
    }).expect(201);
    expect(updated.body.fingerprint).toBe(twin.body.fingerprint);
    expect((await stored(victim.body.id)).fingerprint).toBe(twin.body.fingerprint);
    expect(updated.text).not.toContain(number);
    const found = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', attacker)
      .send({ query: `data:${number.slice(-4)} id:${victim.body.id}` })
      .expect(200);
    expect(found.body.data).toHaveLength(1);

    const failure = await patchToken(t, revealer, victim.body.id, {
      fingerprint_expression: '{{ data[data.number] }}',
    });
    expectProblem(failure, 400);
    expect(failure.text).not.toContain(number);
    expect(failure.body.errors).toEqual({ fingerprint_expression: [expect.stringMatching(/variable/)] });
  });

  it('a key holding the same reveal rule and flat token:read is still refused: flat permissions never reveal', async () => {
    const victim = await tokenize(t, owner, { type: 'card', data: cardData(luhnCard()) }).expect(201);
    const before = await stored(victim.body.id);
    const flat = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:read', 'token:update'],
        rules: [
          {
            priority: 1,
            container: '/pci/',
            permissions: ['token:read', 'token:update'],
            transform: 'reveal',
          },
        ],
      })
    ).key;
    const res = await patchToken(t, flat, victim.body.id, {
      fingerprint_expression: '{{ data.number | last4 }}',
    });
    expectProblem(res, 403);
    expect(res.body.detail).toMatch(/reveal/);
    expect(await stored(victim.body.id)).toEqual(before);
  });
});
