import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import type { AccessRule } from '../../common/auth/access-rule';
import type { Principal } from '../../common/auth/principal';
import type { Change } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { sealCvc, sealData } from './data/seal-data';
import type { CardEnumerationGuard } from './enumeration/card-enumeration.service';
import { DEFAULT_LIMITS, ExpressionEvaluator } from './expressions/expression-evaluator';
import { TokenSearchRepository } from './search/token-search.repository';
import { TokenSearchService } from './search/token-search.service';
import { TokenReads } from './token-reads';
import { type TokenRow, TokensRepository } from './tokens.repository';
import { TokensService } from './tokens.service';

/**
 * The tokens service on the real repositories (the service tier's PGlite): what each write leaves in the
 * database (the token, its CVC and search indexes, audit rows, events), what a read reveals and audits,
 * and another tenant's tokens out of reach. The card enumeration guard is faked (its own spec covers it):
 * it lets every fingerprint be shown and notes in which change it was asked.
 */
const TENANT = '00000000-0000-4000-8000-000000000001';
const OTHER_TENANT = '00000000-0000-4000-8000-000000000009';
const APP = '00000000-0000-4000-8000-000000000003';
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

const principal = (permissions: string[], rules: AccessRule[] = [], tenantId = TENANT): Principal => ({
  tenantId,
  applicationId: APP,
  applicationType: 'private',
  keyKind: 'private',
  keyId: '00000000-0000-4000-8000-000000000004',
  authorized: true,
  permissions,
  rules,
});

const origin = (permissions: string[], rules: AccessRule[] = [], tenantId = TENANT): RequestOrigin => ({
  actor: principal(permissions, rules, tenantId),
});

/** The kind of domain error a refused call fails with (undefined when it succeeds). */
const kindOf = (call: Promise<unknown>): Promise<string | undefined> =>
  call.then(
    () => undefined,
    (error: { kind: string }) => error.kind,
  );

let db: ServiceDatabase;

beforeAll(async () => {
  db = await openServiceDatabase();
  await db.newTenant('tokens', TENANT);
  await db.newTenant('other', OTHER_TENANT);
  await db.subscribe(TENANT);
});
afterAll(() => db.close());
beforeEach(() =>
  db.rows(
    'DELETE FROM tokens; DELETE FROM audit_logs; DELETE FROM webhook_deliveries; DELETE FROM webhook_events;',
  ),
);

/** Stores a token (its data sealed under its tenant's real key) and, when given, its CVC. */
async function store(id: string, overrides: Partial<TokenRow> = {}, data: unknown = CARD, cvc?: string) {
  const row: TokenRow = {
    id,
    tenant_id: TENANT,
    type: 'card',
    mask: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 },
    card_brand: 'visa',
    card_bin: '424242',
    fingerprint: `fp-${id}`,
    fingerprint_groups: null,
    fingerprint_expression: '{{ data.number }}',
    metadata: { k: 'v' },
    search_indexes: null,
    containers: ['/pci/high/'],
    expires_at: null,
    created_by: APP,
    created_at: new Date('2026-01-01T00:00:00Z'),
    modified_by: null,
    modified_at: null,
    ...overrides,
  };
  const keys = await db.tenantKeys.keysFor(row.tenant_id);
  await db.work.transaction({}, (change) =>
    new TokensRepository(db.dataSource).insert(
      change,
      {
        tokens: [{ ...row, data: sealData(keys, row, data), data_key: keys.data.generation }],
        digests: [],
        cvcs: cvc
          ? [
              {
                tenantId: row.tenant_id,
                tokenId: id,
                cvc: sealCvc(keys, row, cvc),
                dataKey: keys.data.generation,
                expiresAt: new Date(Date.now() + 3_600_000),
              },
            ]
          : [],
      },
      { refused: () => new Error(`token ${id} exists`) },
    ),
  );
}

/** A token as the database holds it (undefined once deleted). */
const stored = async (id: string) =>
  (
    await db.rows<{
      metadata: object;
      modified_by: string | null;
      expires_at: Date | null;
      search_indexes: string[] | null;
    }>('SELECT metadata, modified_by, expires_at, search_indexes FROM tokens WHERE id = $1', [id])
  )[0];
const indexesOf = async (id: string) =>
  (await db.rows('SELECT 1 FROM token_search_indexes WHERE token_id = $1', [id])).length;
const cvcOf = async (id: string) =>
  (await db.rows('SELECT 1 FROM token_cvcs WHERE token_id = $1', [id])).length;
const audit = () =>
  db.rows<{ entity_type: string; entity_id: string; operation: string; message: string; token_type: string }>(
    `SELECT entity_type, entity_id, operation, message, token_type FROM audit_logs ORDER BY created_at, ctid`,
  );
const events = () =>
  db.rows<{ type: string; entity_id: string; tenant_id: string }>(
    'SELECT type, entity_id, tenant_id FROM webhook_events ORDER BY created_at, ctid',
  );

function setUp() {
  const repository = new TokensRepository(db.dataSource);
  const clock = db.clock;
  clock.reset();
  const showable: { ids: string[]; change?: Change }[] = [];
  const enumeration = {
    showable: async (_who: Principal, rows: TokenRow[], change?: Change) => {
      showable.push({ ids: rows.map((row) => row.id), change });
      return new Set(rows.map((row) => row.id));
    },
  } as unknown as CardEnumerationGuard;
  const tenantKeys = db.freshTenantKeys();
  const reads = new TokenReads(repository, tenantKeys, enumeration, db.work);
  const service = new TokensService(
    new ExpressionEvaluator({ ...DEFAULT_LIMITS, workers: 0 }),
    repository,
    reads,
    tenantKeys,
    clock,
    enumeration,
    db.work,
  );
  const search = new TokenSearchService(new TokenSearchRepository(db.dataSource), tenantKeys, clock, reads);
  return { service, search, clock, showable };
}

const REVEAL: AccessRule = {
  priority: 1,
  container: '/pci/',
  permissions: ['token:read', 'token:search', 'token:update'],
  transform: 'reveal',
};

describe('TokensService (real repositories on PGlite)', () => {
  describe('delete', () => {
    it('deletes the token and its CVC in one transaction, with its audit row (its type) and its event', async () => {
      const s = setUp();
      await store('t1', {}, CARD, '123');
      await s.service.delete(origin(['token:delete']), 't1');
      expect(await stored('t1')).toBeUndefined();
      expect(await cvcOf('t1')).toBe(0);
      expect(await audit()).toEqual([
        {
          entity_type: 'token',
          entity_id: 't1',
          operation: 'delete',
          message: 'Token deleted',
          token_type: 'card',
        },
      ]);
      expect(await events()).toEqual([{ type: 'token:deleted', entity_id: 't1', tenant_id: TENANT }]);
    });

    it('an absent token, or one of another tenant, is a 404 that rolls back and logs nothing', async () => {
      const s = setUp();
      await store('t1', { tenant_id: OTHER_TENANT });
      expect(await kindOf(s.service.delete(origin(['token:delete']), 't1'))).toBe('not_found');
      expect(await kindOf(s.service.delete(origin(['token:delete']), 'absent'))).toBe('not_found');
      expect(await stored('t1')).toBeDefined();
      expect(await audit()).toEqual([]);
    });

    it('a rule that covers the token without token:delete is a 403; no rule covering it is a 404', async () => {
      const s = setUp();
      await store('t1');
      const reader = origin([], [{ priority: 1, container: '/pci/', permissions: ['token:read'] }]);
      expect(await kindOf(s.service.delete(reader, 't1'))).toBe('forbidden');
      const elsewhere = origin([], [{ priority: 1, container: '/bank/', permissions: ['token:delete'] }]);
      expect(await kindOf(s.service.delete(elsewhere, 't1'))).toBe('not_found');
      expect(await stored('t1')).toBeDefined();
    });

    it('an expired token is gone: 404', async () => {
      const s = setUp();
      await store('t1', { expires_at: new Date(s.clock.now().getTime() + 60_000) });
      s.clock.advance(120_000);
      expect(await kindOf(s.service.delete(origin(['token:delete']), 't1'))).toBe('not_found');
    });
  });

  describe('update', () => {
    it('merges metadata in one transaction, with its audit row, its event and a masked answer', async () => {
      const s = setUp();
      await store('t1');
      const answer = await s.service.update(origin(['token:update', 'token:read']), 't1', {
        metadata: { added: 'yes', k: null },
      });
      expect(await stored('t1')).toMatchObject({ metadata: { added: 'yes' }, modified_by: APP });
      expect(answer).toMatchObject({ id: 't1', metadata: { added: 'yes' } });
      expect(JSON.stringify(answer)).not.toContain(CARD.number);
      expect(await audit()).toEqual([
        {
          entity_type: 'token',
          entity_id: 't1',
          operation: 'update',
          message: 'Token updated',
          token_type: 'card',
        },
      ]);
      expect(await events()).toEqual([expect.objectContaining({ type: 'token:updated', entity_id: 't1' })]);
      // The fingerprint of the answer is counted in the update's own change.
      expect(s.showable).toEqual([{ ids: ['t1'], change: expect.objectContaining({ mode: 'transaction' }) }]);
    });

    it('an invalid expires_at is refused before any change opens', async () => {
      const s = setUp();
      await store('t1');
      expect(await kindOf(s.service.update(origin(['token:update']), 't1', { expires_at: 'soon' }))).toBe(
        'invalid',
      );
      expect(await audit()).toEqual([]);
    });

    it('setting an expiry needs token:delete (it is a delete), and writes nothing without it', async () => {
      const s = setUp();
      await store('t1');
      const expires_at = '2099-01-01T00:00:00Z';
      expect(await kindOf(s.service.update(origin(['token:update']), 't1', { expires_at }))).toBe(
        'forbidden',
      );
      expect(await stored('t1')).toMatchObject({ expires_at: null, modified_by: null });
      expect(await audit()).toEqual([]);
      await s.service.update(origin(['token:update', 'token:delete']), 't1', { expires_at });
      expect((await stored('t1')).expires_at).toEqual(new Date(expires_at));
    });

    it('re-keying over the stored data needs a reveal rule; with one, the fingerprint and indexes are recomputed', async () => {
      const s = setUp();
      await store('t1');
      const rekey = { search_indexes: ['{{ data.number }}'] };
      expect(await kindOf(s.service.update(origin(['token:update', 'token:read']), 't1', rekey))).toBe(
        'forbidden',
      );
      expect(await indexesOf('t1')).toBe(0);
      await s.service.update(origin([], [REVEAL]), 't1', rekey);
      expect(await indexesOf('t1')).toBe(1);
      expect((await stored('t1')).search_indexes).toEqual(['{{ data.number }}']);
    });
  });

  describe('reads', () => {
    it('a masked read writes nothing', async () => {
      const s = setUp();
      await store('t1');
      const answer = await s.service.get(origin(['token:read']), 't1');
      expect(answer).toMatchObject({ id: 't1', mask: { number: 'XXXXXXXXXXXX4242' } });
      expect(answer).not.toHaveProperty('data');
      expect(await audit()).toEqual([]);
    });

    it('a read through a reveal rule: the data in clear, one reveal row in a change of its own, the answer withheld from replay', async () => {
      const s = setUp();
      await store('t1', {}, { ...CARD, cvc: undefined }, '123');
      const claim = { record: jest.fn(), pin: jest.fn(), withhold: jest.fn() };
      const reader: RequestOrigin = { ...origin([], [REVEAL]), idempotency: claim };
      const answer = await s.service.get(reader, 't1');
      expect(answer).toMatchObject({ id: 't1', data: { number: CARD.number } });
      expect(JSON.stringify(answer)).not.toContain('123"');
      expect(claim.withhold).toHaveBeenCalled();
      // The change answers no request: it has the actor, not the claim.
      expect(claim.record).not.toHaveBeenCalled();
      expect(await audit()).toEqual([
        {
          entity_type: 'token',
          entity_id: 't1',
          operation: 'reveal',
          message: 'Token revealed (card)',
          token_type: 'card',
        },
      ]);
      expect(JSON.stringify(await db.rows('SELECT * FROM audit_logs'))).not.toContain(CARD.number);
    });

    it('a search reveals and logs only the tokens its reveal rule covers, of its own tenant', async () => {
      const s = setUp();
      await store('card');
      await store('bank', { type: 'bank', containers: ['/bank/high/'], mask: null });
      await store('theirs', { tenant_id: OTHER_TENANT });
      const page = await s.search.search(
        origin([], [REVEAL, { priority: 2, container: '/bank/', permissions: ['token:search'] }]),
        { query: 'type:card OR type:bank', page: 1, size: 10 },
      );
      expect(page.data.map((t) => t.id).sort()).toEqual(['bank', 'card']);
      expect((await audit()).map((row) => [row.operation, row.entity_id])).toEqual([['reveal', 'card']]);
    });
  });

  describe('for other modules', () => {
    it('readableTokens reads and counts in the change it is given', async () => {
      const s = setUp();
      await store('t1');
      await store('t2', { containers: ['/bank/high/'] });
      await db.work.transaction({}, async (theirs) => {
        const readable = await s.service.readableTokens(
          principal([], [{ priority: 1, container: '/pci/', permissions: ['token:read'] }]),
          ['t1', 't2', 't1', 'absent'],
          theirs,
        );
        expect([...readable]).toEqual(['t1']);
        expect(s.showable).toEqual([{ ids: ['t1'], change: theirs }]);
      });
    });

    it('forgetCvc deletes the CVC in the caller’s change; loadForUse opens data and CVC for token:use only', async () => {
      const s = setUp();
      await store('t1', {}, CARD, '123');
      expect(await s.service.loadForUse(principal(['token:read']), 't1')).toBeUndefined();
      const usable = await s.service.loadForUse(principal(['token:use']), 't1');
      expect(usable).toMatchObject({ id: 't1', data: CARD, cvc: '123' });
      await expect(
        db.work.transaction({}, async (theirs) => {
          await s.service.forgetCvc(theirs, TENANT, 't1');
          throw new Error('the caller failed');
        }),
      ).rejects.toThrow('the caller failed');
      expect(await cvcOf('t1')).toBe(1);
      await db.work.transaction({}, (theirs) => s.service.forgetCvc(theirs, TENANT, 't1'));
      expect(await cvcOf('t1')).toBe(0);
    });
  });
});
