import { ClsService } from 'nestjs-cls';
import request from 'supertest';
import { DataSource } from 'typeorm';
import type { Principal } from '../../src/common/auth/principal';
import { toProblem } from '../../src/common/errors/problem-details';
import { TokensService } from '../../src/modules/tokens/tokens.service';
import {
  expectProblem,
  newApplication,
  newTenant,
  privatePrincipal,
  TestApp,
  TestTenant,
} from '../support/app';
import { authorizedSession, cardData, luhnCard, patchToken, tokenize, scene } from '../support/attacker';

/**
 * Abuse class: evaluation over stored data (contract section 15). Re-keying a stored card's
 * `fingerprint_expression` or `search_indexes` and comparing the result with tokens the attacker made
 * itself is an oracle on the hidden digits. A PATCH that changes either needs a reveal rule with
 * `token:read` over the token; reveal does not exist yet (section 12), so it is a 403 for every key.
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

  it('with a reveal rule (section 12; set on the principal, no endpoint grants one yet) the expressions are recomputed, and errors still carry no data', async () => {
    const number = luhnCard();
    const victim = await tokenize(t, owner, { type: 'card', data: cardData(number) }).expect(201);
    const revealer: Principal = {
      ...privatePrincipal(tenant.tenantId, []),
      rules: [
        {
          priority: 1,
          container: '/pci/',
          permissions: ['token:read', 'token:update'],
          transform: 'reveal' as never,
        },
      ],
    };
    const update = (body: Record<string, unknown>) =>
      t.app.get(ClsService).run(() => t.app.get(TokensService).update(revealer, victim.body.id, body));
    const updated = await update({
      fingerprint_expression: '{{ data.number | slice: 0, 6 }}',
      search_indexes: ['{{ data.number | last4 }}'],
    });
    const twin = await tokenize(t, owner, {
      type: 'token',
      data: number.slice(0, 6),
      fingerprint_expression: '{{ data }}',
    }).expect(201);
    expect(updated.fingerprint).toBe(twin.body.fingerprint);
    const found = await request(t.http)
      .post('/tokens/search')
      .set('BT-API-KEY', attacker)
      .send({ query: `data:${number.slice(-4)} id:${victim.body.id}` })
      .expect(200);
    expect(found.body.data).toHaveLength(1);

    const failure = await update({ fingerprint_expression: '{{ data[data.number] }}' }).catch(
      (e: unknown) => e,
    );
    // As the client would see it: the one mapping of exceptions onto problems.
    const { body: problem, unexpected } = toProblem(failure);
    expect(unexpected).toBe(false);
    expect(problem.status).toBe(400);
    expect(JSON.stringify(problem)).not.toContain(number);
    expect(problem.errors).toEqual({ fingerprint_expression: [expect.stringMatching(/variable/)] });
  });
});
