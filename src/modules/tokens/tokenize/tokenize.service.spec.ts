import { openData } from '../data/seal-data';
import { CardEnumerationRefused } from '../enumeration/card-enumeration.service';
import {
  TENANT,
  OTHER_TENANT,
  CARD,
  kindOf,
  cardNumber,
  principal,
  tokens,
  audit,
  events,
  setUp,
  origin,
  useTokenizeDatabase,
} from '../../../../test/support/tokenize-fixture';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';

const database = useTokenizeDatabase();

describe('TokenizeService (real repository on PGlite)', () => {
  it('writes a tokenize of generated ids as one statement, with one audit row and one event per token', async () => {
    const s = setUp();
    const answer = (await s.service.tokenize(origin(), { a: 'one', b: { type: 'card', data: CARD } })) as {
      a: string;
      b: { id: string; type: string };
    };
    expect(s.modes()).toEqual(['statement']);
    expect(s.inserts.mock.calls[0][2]).toHaveProperty('refused');
    expect(await audit()).toEqual([
      {
        entity_type: 'token',
        entity_id: answer.a,
        operation: 'create',
        message: 'Token created (token)',
        token_type: 'token',
      },
      {
        entity_type: 'token',
        entity_id: answer.b.id,
        operation: 'create',
        message: 'Token created (card)',
        token_type: 'card',
      },
    ]);
    expect((await events()).map((event) => [event.type, event.entity_id])).toEqual([
      ['token:created', answer.a],
      ['token:created', answer.b.id],
    ]);
    expect(s.created).toEqual([['token', 'card']]);
  });

  it('answers the shape of the request: a string becomes an id, an element a token object', async () => {
    const s = setUp();
    const answer = (await s.service.tokenize(origin(), ['x', { type: 'card', data: CARD }])) as unknown[];
    expect(typeof answer[0]).toBe('string');
    expect(answer[1]).toMatchObject({ type: 'card', id: expect.any(String) });
    expect(JSON.stringify(answer)).not.toContain(CARD.number);
  });

  it("seals the data under the tenant's key: what is stored opens to the data given, bound to its tenant and id", async () => {
    const s = setUp();
    const { id } = await s.service.createOne(origin(), { type: 'token', data: { secret: 'value' } });
    const [stored] = await tokens();
    expect(stored.id).toBe(id);
    expect(stored.data.toString('latin1')).not.toContain('value');
    const keys = await database().tenantKeys.keysFor(TENANT);
    expect(openData(keys, stored)).toEqual({ secret: 'value' });
    expect(() => openData(keys, { ...stored, id: 'another' })).toThrow();
  });

  it('keeps a card CVC apart for an hour from now (the clock)', async () => {
    const s = setUp();
    s.clock.advance(86_400_000);
    const now = s.clock.now().getTime();
    await s.service.createOne(origin(), { type: 'card', data: { ...CARD, cvc: '123' } });
    const [cvc] = await database().rows<{ expires_at: Date; cvc: Buffer }>(
      'SELECT expires_at, cvc FROM token_cvcs',
    );
    expect(cvc.expires_at.getTime() - now).toBeGreaterThanOrEqual(60 * 60 * 1000);
    expect(cvc.expires_at.getTime() - now).toBeLessThan(60 * 60 * 1000 + 1000);
    expect(cvc.cvc.toString('latin1')).not.toContain('123');
  });

  it('refuses token:create on a container the caller lacks, writing nothing', async () => {
    const s = setUp();
    const who: RequestOrigin = {
      actor: {
        ...principal([]),
        rules: [{ priority: 1, container: '/general/', permissions: ['token:create'] }],
      },
    };
    expect(await kindOf(s.service.createOne(who, { type: 'card', data: CARD }))).toBe('forbidden');
    expect(s.inserts).not.toHaveBeenCalled();
    expect(await tokens()).toEqual([]);
  });

  it('refuses invalid data with field errors before any change opens', async () => {
    const s = setUp();
    expect(await kindOf(s.service.tokenize(origin(), { a: { type: 'card', data: { number: '123' } } }))).toBe(
      'invalid',
    );
    expect(s.inserts).not.toHaveBeenCalled();
    expect(await audit()).toEqual([]);
  });

  it('refuses an empty request and one with the same id twice', async () => {
    const s = setUp();
    expect(await kindOf(s.service.tokenize(origin(), {}))).toBe('invalid');
    expect(
      await kindOf(
        s.service.tokenize(origin(), [
          { type: 'token', data: 'a', id: 'same-id' },
          { type: 'token', data: 'b', id: 'same-id' },
        ]),
      ),
    ).toBe('invalid');
    expect(s.inserts).not.toHaveBeenCalled();
  });

  it('writes given ids in a transaction: expired holders purged first, the insert answers the ids written', async () => {
    const s = setUp();
    await s.service.createOne(origin(), { type: 'token', data: 'a', id: 'given-1' });
    expect(s.modes()).toEqual(['transaction']);
    expect(s.purged.mock.calls.map((call) => call[2])).toEqual([['given-1']]);
    expect(s.inserts.mock.calls[0][2]).toHaveProperty('named');
    expect((await tokens()).map((row) => row.id)).toEqual(['given-1']);
  });

  it('a given id already taken is a 409 naming it, and the change rolls back with its audit rows', async () => {
    const s = setUp();
    await s.service.createOne(origin(), { type: 'token', data: 'a', id: 'taken-1' });
    const taken = s.service.createOne(origin(), { type: 'token', data: 'b', id: 'taken-1' });
    await expect(taken).rejects.toThrow('taken-1');
    expect(await kindOf(taken)).toBe('conflict');
    expect(await audit()).toHaveLength(1);
    expect(await events()).toHaveLength(1);
  });

  it('an expired token frees its id at once', async () => {
    const s = setUp();
    await s.service.createOne(origin(), {
      type: 'token',
      data: 'a',
      id: 'short-1',
      expires_at: '2099-01-01',
    });
    await database().rows(`UPDATE tokens SET expires_at = $1 WHERE id = 'short-1'`, [
      new Date(s.clock.now().getTime() + 1000),
    ]);
    s.clock.advance(2000);
    await s.service.createOne(origin(), { type: 'token', data: 'b', id: 'short-1' });
    expect(await audit()).toHaveLength(2);
    expect(await tokens()).toHaveLength(1);
  });

  it('deduplicates under the lock: the second request answers the first token and writes nothing', async () => {
    const s = setUp();
    const who = origin(['token:create', 'token:read']);
    const body = { type: 'token', data: 'same', deduplicate_token: true };
    const first = await s.service.createOne(who, body);
    const second = await s.service.createOne(who, body);
    expect(second.id).toBe(first.id);
    expect(s.locked).toHaveBeenCalledTimes(2);
    expect(await tokens()).toHaveLength(1);
    expect(await audit()).toHaveLength(1);
    expect(await events()).toHaveLength(1);
  });

  it('does not answer a duplicate the caller may not read: it makes its own token', async () => {
    const s = setUp();
    const body = { type: 'token', data: 'same', deduplicate_token: true };
    await s.service.createOne(origin(['token:create', 'token:read']), body);
    await s.service.createOne(origin(['token:create']), body);
    expect(await tokens()).toHaveLength(2);
  });

  it('another tenant never deduplicates against this one', async () => {
    const s = setUp();
    const body = { type: 'token', data: 'same', deduplicate_token: true };
    const mine = await s.service.createOne(origin(['token:create', 'token:read']), body);
    const theirs = await s.service.createOne(origin(['token:create', 'token:read'], OTHER_TENANT), body);
    expect(theirs.id).not.toBe(mine.id);
    expect(s.locked.mock.calls.map((call) => call[1])).toEqual([TENANT, OTHER_TENANT]);
    expect((await tokens()).map((row) => row.tenant_id).sort()).toEqual([TENANT, OTHER_TENANT].sort());
  });

  it('counts the card numbers of a caller that learns fingerprints, in the one statement', async () => {
    const s = setUp();
    await s.service.createOne(origin(['token:create', 'token:read']), { type: 'card', data: CARD });
    expect(s.modes()).toEqual(['statement']);
    expect(s.counted).toEqual([[CARD.number]]);
    expect((await tokens())[0].fingerprint_groups).toBeNull();
  });

  it('a statement whose groups another request counted in meanwhile is tried again on a fresh read', async () => {
    const s = setUp({ conflicts: 2 });
    await s.service.createOne(origin(['token:create', 'token:read']), { type: 'card', data: CARD });
    // The two refused statements wrote nothing; the third inserted.
    expect(s.modes()).toEqual(['statement']);
    expect(s.counted).toEqual([[CARD.number]]);
    expect(await tokens()).toHaveLength(1);
    expect(s.conflicts).toBe(2);
  });

  it('on the embedded database, counted numbers go in a transaction that locks the groups at once', async () => {
    const s = setUp({ optimistic: false, conflicts: 100 });
    await s.service.createOne(origin(['token:create', 'token:read']), { type: 'card', data: CARD });
    expect(s.modes()).toEqual(['transaction']);
    expect(s.conflicts).toBe(0);
    // A tokenize the guard does not count stays one statement there too.
    await s.service.createOne(origin(), { type: 'card', data: CARD });
    expect(s.modes()).toEqual(['transaction', 'statement']);
  });

  it('after three conflicts, the groups are locked: a transaction, which always goes through', async () => {
    const s = setUp({ conflicts: 100 });
    await s.service.createOne(origin(['token:create', 'token:read']), { type: 'card', data: CARD });
    expect(s.modes()).toEqual(['transaction']);
    expect(await tokens()).toHaveLength(1);
    expect(s.conflicts).toBe(3);
  });

  it('keeps the pending groups of a card whose caller learns no fingerprint (counted at its first read)', async () => {
    const s = setUp();
    await s.service.createOne(origin(), { type: 'card', data: CARD });
    expect(s.counted).toEqual([]);
    expect((await tokens())[0].fingerprint_groups).toHaveLength(1);
  });

  it('past the enumeration limit: 429, nothing written, the refusal logged in a change of its own after the rollback', async () => {
    const s = setUp({ limit: 1 });
    const who = origin(['token:create', 'token:read']);
    const cards = [1, 2].map((n) => ({ type: 'card', data: { ...CARD, number: cardNumber(n) } }));
    await expect(s.service.tokenize(who, cards)).rejects.toBeInstanceOf(CardEnumerationRefused);
    expect(await tokens()).toEqual([]);
    expect(await audit()).toEqual([]);
    expect(s.refusals).toEqual([who.actor]);
    expect(s.created).toEqual([]);
  });

  it('hands the request origin (with its idempotency claim) to the change, which records the answer', async () => {
    const s = setUp();
    const claim = { record: jest.fn(), pin: jest.fn(), withhold: jest.fn() };
    const idempotent: RequestOrigin = { ...origin(), idempotency: claim };
    const created = await s.service.createOne(idempotent, { type: 'token', data: 'a' });
    expect(claim.record).toHaveBeenCalledWith(expect.objectContaining({ origin: idempotent }), created);
  });

  describe('a public key or a session', () => {
    const publicOrigin = (client: string, applicationId = '00000000-0000-4000-8000-000000000005') => ({
      actor: {
        ...principal(['token:create']),
        applicationId,
        applicationType: 'public' as const,
        keyKind: 'public' as const,
      },
      client,
    });
    const problem = (call: Promise<unknown>) =>
      call.then(
        () => undefined,
        (error: {
          code?: string;
          errors?: unknown;
          extras?: { code?: string; headers?: unknown };
          getStatus?: () => number;
        }) => error,
      );

    it('creates at most 10 tokens per request: 11 is a 400 naming the 11th field, nothing written or counted', async () => {
      const s = setUp();
      const eleven = Array.from({ length: 11 }, (_, i) => `value ${i}`);
      const refused = (await problem(s.service.tokenize(publicOrigin('192.0.2.1'), eleven))) as {
        code: string;
        errors: Record<string, string[]>;
      };
      expect(refused).toBeInstanceOf(Error);
      expect(refused.code).toBe('too_many_tokens');
      expect(Object.keys(refused.errors)).toEqual(['[10]']);
      expect(JSON.stringify(refused)).not.toContain('value');
      expect(s.inserts).not.toHaveBeenCalled();
      expect(s.hits.size).toBe(0);
      await s.service.tokenize(publicOrigin('192.0.2.1'), eleven.slice(0, 10));
      expect(await tokens()).toHaveLength(10);
      // A private key is not concerned.
      await s.service.tokenize(origin(), eleven);
      expect(await tokens()).toHaveLength(21);
    });

    it('past PUBLIC_TOKENIZE_PER_MINUTE requests of one address and application: 429 with Retry-After, nothing written', async () => {
      const s = setUp({ publicPerMinute: 2 });
      await s.service.tokenize(publicOrigin('192.0.2.1'), ['a']);
      await s.service.createOne(publicOrigin('192.0.2.1'), { type: 'token', data: 'b' });
      const refused = (await problem(s.service.tokenize(publicOrigin('192.0.2.1'), ['c']))) as {
        getStatus(): number;
        extras: { code: string; headers: Record<string, string> };
      };
      expect(refused.getStatus()).toBe(429);
      expect(refused.extras).toMatchObject({ code: 'rate_limited', headers: { 'Retry-After': '42' } });
      expect(await tokens()).toHaveLength(2);
      await s.service.tokenize(publicOrigin('192.0.2.2'), ['d']);
      await s.service.tokenize(publicOrigin('192.0.2.1', '00000000-0000-4000-8000-000000000006'), ['e']);
      for (let i = 0; i < 3; i++) await s.service.tokenize(origin(), ['f']);
      expect(await tokens()).toHaveLength(7);
    });
  });
});
