import type { AccessRule } from '../../common/auth/access-rule';
import type { Principal } from '../../common/auth/principal';
import type { TenantKeys, TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { Clock } from '../../common/jobs/clock';
import type { Change, Queryable } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { FakeUnitOfWork } from '../../../test/support/fake-unit-of-work';
import { sealCvc, sealData } from './data/seal-data';
import type { CardEnumerationGuard } from './enumeration/card-enumeration.service';
import { DEFAULT_LIMITS, ExpressionEvaluator } from './expressions/expression-evaluator';
import type { SearchScope, TokenSearch, TokenSearchRepository } from './search/token-search.repository';
import { TokenSearchService } from './search/token-search.service';
import { TokenReads } from './token-reads';
import type { SealedToken, TokenChanges, TokenRow, TokensRepository } from './tokens.repository';
import { TokensService } from './tokens.service';

const TENANT = '00000000-0000-4000-8000-000000000001';
const OTHER_TENANT = '00000000-0000-4000-8000-000000000009';
const APP = '00000000-0000-4000-8000-000000000003';
const KEYS: TenantKeys = {
  encryption: Buffer.alloc(32, 1),
  fingerprint: Buffer.alloc(32, 2),
  searchIndex: Buffer.alloc(32, 3),
  idempotency: Buffer.alloc(32, 4),
};
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

function token(id: string, overrides: Partial<TokenRow> = {}, data: unknown = CARD): SealedToken {
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
  return { ...row, data: sealData(KEYS, row, data) };
}

/** The tokens of one test, as the service sees them through its repository. */
class FakeTokens {
  readonly rows = new Map<string, SealedToken>();
  readonly cvcs = new Map<string, Buffer>();
  readonly calls: string[] = [];
  readonly changes: (Change | Queryable | undefined)[] = [];
  readonly indexes = new Map<string, Buffer[]>();

  private live(tenantId: string, id: string, now: Date): SealedToken | undefined {
    const row = this.rows.get(id);
    return row && row.tenant_id === tenantId && (!row.expires_at || row.expires_at > now) ? row : undefined;
  }

  async findLive(tenantId: string, id: string, now: Date) {
    this.calls.push('findLive');
    return this.live(tenantId, id, now);
  }

  async lockLive(change: Change, tenantId: string, id: string, now: Date) {
    this.calls.push('lockLive');
    this.changes.push(change);
    return this.live(tenantId, id, now);
  }

  async findSealedData(tenantId: string, ids: string[]) {
    return new Map(
      ids.flatMap((id) => {
        const row = this.rows.get(id);
        return row && row.tenant_id === tenantId ? [[id, row.data] as const] : [];
      }),
    );
  }

  async findLiveByIds(db: Queryable, tenantId: string, ids: string[], now: Date) {
    this.changes.push(db);
    return ids.flatMap((id) => {
      const row = this.live(tenantId, id, now);
      return row ? [row] : [];
    });
  }

  async replaceSearchIndexes(change: Change, _tenantId: string, id: string, digests: Buffer[]) {
    this.changes.push(change);
    this.indexes.set(id, digests);
  }

  async update(change: Change, tenantId: string, id: string, changes: TokenChanges) {
    this.calls.push('update');
    this.changes.push(change);
    const row = this.rows.get(id);
    if (row && row.tenant_id === tenantId) this.rows.set(id, { ...row, ...changes });
  }

  async delete(change: Change, tenantId: string, id: string) {
    this.calls.push('delete');
    this.changes.push(change);
    if (this.rows.get(id)?.tenant_id === tenantId) this.rows.delete(id);
  }

  async findLiveCvc(_tenantId: string, id: string) {
    return this.cvcs.get(id);
  }

  async deleteCvc(change: Change, _tenantId: string, id: string) {
    this.changes.push(change);
    this.cvcs.delete(id);
  }
}

function setUp() {
  const tokens = new FakeTokens();
  const work = new FakeUnitOfWork();
  const clock = new Clock();
  const showable: { ids: string[]; change?: Change }[] = [];
  const enumeration = {
    showable: async (_who: Principal, rows: TokenRow[], change?: Change) => {
      showable.push({ ids: rows.map((row) => row.id), change });
      return new Set(rows.map((row) => row.id));
    },
  } as unknown as CardEnumerationGuard;
  const searched: { scope: SearchScope; search: TokenSearch }[] = [];
  const searches = {
    findOffsetPage: async (scope: SearchScope, search: TokenSearch) => {
      searched.push({ scope, search });
      const rows = [...tokens.rows.values()].filter((row) => row.tenant_id === scope.who.tenantId);
      return { rows: rows.map(({ data: _data, ...row }) => row), total: rows.length };
    },
  } as unknown as TokenSearchRepository;
  const tenantKeys = { keysFor: async () => KEYS } as unknown as TenantKeysService;
  const reads = new TokenReads(
    tokens as unknown as TokensRepository,
    tenantKeys,
    enumeration,
    work.asUnitOfWork(),
  );
  const service = new TokensService(
    new ExpressionEvaluator({ ...DEFAULT_LIMITS, workers: 0 }),
    tokens as unknown as TokensRepository,
    reads,
    tenantKeys,
    clock,
    enumeration,
    work.asUnitOfWork(),
  );
  const search = new TokenSearchService(searches, tenantKeys, clock, reads);
  return { service, search, tokens, work, clock, showable, searched };
}

const REVEAL: AccessRule = {
  priority: 1,
  container: '/pci/',
  permissions: ['token:read', 'token:search', 'token:update'],
  transform: 'reveal',
};

describe('TokensService', () => {
  describe('delete', () => {
    it('deletes the token locked in one transaction, with its audit row (its type) and its event', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1'));
      await s.service.delete(origin(['token:delete']), 't1');
      expect(s.tokens.rows.has('t1')).toBe(false);
      expect(s.tokens.calls).toEqual(['lockLive', 'delete']);
      expect(s.work.committed.map((change) => change.mode)).toEqual(['transaction']);
      expect(s.tokens.changes).toEqual([s.work.committed[0], s.work.committed[0]]);
      expect(s.work.audit).toEqual([
        {
          entityType: 'token',
          entityId: 't1',
          operation: 'delete',
          message: 'Token deleted',
          tokenType: 'card',
        },
      ]);
      expect(s.work.events).toEqual([
        expect.objectContaining({ type: 'token:deleted', entityId: 't1', tenantId: TENANT }),
      ]);
    });

    it('an absent token, or one of another tenant, is a 404 that rolls back and logs nothing', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1', { tenant_id: OTHER_TENANT }));
      expect(await kindOf(s.service.delete(origin(['token:delete']), 't1'))).toBe('not_found');
      expect(await kindOf(s.service.delete(origin(['token:delete']), 'absent'))).toBe('not_found');
      expect(s.tokens.rows.has('t1')).toBe(true);
      expect(s.work.rolledBack).toHaveLength(2);
      expect(s.work.audit).toEqual([]);
    });

    it('a rule that covers the token without token:delete is a 403; no rule covering it is a 404', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1'));
      const reader = origin([], [{ priority: 1, container: '/pci/', permissions: ['token:read'] }]);
      expect(await kindOf(s.service.delete(reader, 't1'))).toBe('forbidden');
      const elsewhere = origin([], [{ priority: 1, container: '/bank/', permissions: ['token:delete'] }]);
      expect(await kindOf(s.service.delete(elsewhere, 't1'))).toBe('not_found');
      expect(s.tokens.calls).not.toContain('delete');
    });

    it('an expired token is gone: 404', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1', { expires_at: new Date(s.clock.now().getTime() + 60_000) }));
      s.clock.advance(120_000);
      expect(await kindOf(s.service.delete(origin(['token:delete']), 't1'))).toBe('not_found');
    });
  });

  describe('update', () => {
    it('merges metadata in one transaction, with its audit row, its event and a masked answer', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1'));
      const answer = await s.service.update(origin(['token:update', 'token:read']), 't1', {
        metadata: { added: 'yes', k: null },
      });
      expect(s.tokens.rows.get('t1')!.metadata).toEqual({ added: 'yes' });
      expect(s.tokens.rows.get('t1')!.modified_by).toBe(APP);
      expect(answer).toMatchObject({ id: 't1', metadata: { added: 'yes' } });
      expect(JSON.stringify(answer)).not.toContain(CARD.number);
      expect(s.work.committed.map((change) => change.mode)).toEqual(['transaction']);
      expect(s.work.audit).toEqual([
        {
          entityType: 'token',
          entityId: 't1',
          operation: 'update',
          message: 'Token updated',
          tokenType: 'card',
        },
      ]);
      expect(s.work.events).toEqual([expect.objectContaining({ type: 'token:updated', entityId: 't1' })]);
      // The fingerprint of the answer is counted in the update's own change.
      expect(s.showable).toEqual([{ ids: ['t1'], change: s.work.committed[0] }]);
    });

    it('an invalid expires_at is refused before any change opens', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1'));
      expect(await kindOf(s.service.update(origin(['token:update']), 't1', { expires_at: 'soon' }))).toBe(
        'invalid',
      );
      expect(s.work.committed.length + s.work.rolledBack.length).toBe(0);
    });

    it('setting an expiry needs token:delete (it is a delete), and writes nothing without it', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1'));
      const expires_at = '2099-01-01T00:00:00Z';
      expect(await kindOf(s.service.update(origin(['token:update']), 't1', { expires_at }))).toBe(
        'forbidden',
      );
      expect(s.tokens.calls).not.toContain('update');
      expect(s.work.audit).toEqual([]);
      await s.service.update(origin(['token:update', 'token:delete']), 't1', { expires_at });
      expect(s.tokens.rows.get('t1')!.expires_at).toEqual(new Date(expires_at));
    });

    it('re-keying over the stored data needs a reveal rule; with one, the fingerprint and indexes are recomputed', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1'));
      const rekey = { search_indexes: ['{{ data.number }}'] };
      expect(await kindOf(s.service.update(origin(['token:update', 'token:read']), 't1', rekey))).toBe(
        'forbidden',
      );
      await s.service.update(origin([], [REVEAL]), 't1', rekey);
      expect(s.tokens.indexes.get('t1')).toHaveLength(1);
      expect(s.tokens.rows.get('t1')!.search_indexes).toEqual(['{{ data.number }}']);
    });
  });

  describe('reads', () => {
    it('a masked read writes nothing: no change opens', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1'));
      const answer = await s.service.get(origin(['token:read']), 't1');
      expect(answer).toMatchObject({ id: 't1', mask: { number: 'XXXXXXXXXXXX4242' } });
      expect(answer).not.toHaveProperty('data');
      expect(s.tokens.calls).toEqual(['findLive']);
      expect(s.work.committed).toEqual([]);
    });

    it('a read through a reveal rule: the data in clear, one reveal row in a change of its own, the answer withheld from replay', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1', {}, { ...CARD, cvc: undefined }));
      s.tokens.cvcs.set('t1', sealCvc(KEYS, token('t1'), '123'));
      const claim = { record: jest.fn(), pin: jest.fn(), withhold: jest.fn() };
      const reader: RequestOrigin = { ...origin([], [REVEAL]), idempotency: claim };
      const answer = await s.service.get(reader, 't1');
      expect(answer).toMatchObject({ id: 't1', data: { number: CARD.number } });
      expect(JSON.stringify(answer)).not.toContain('123"');
      expect(claim.withhold).toHaveBeenCalled();
      expect(s.work.committed).toHaveLength(1);
      // The change answers no request: it has the actor, not the claim.
      expect(s.work.committed[0].origin).toEqual({ actor: reader.actor });
      expect(s.work.audit).toEqual([
        {
          entityType: 'token',
          entityId: 't1',
          operation: 'reveal',
          message: 'Token revealed (card)',
          tokenType: 'card',
        },
      ]);
    });

    it('a search reveals and logs only the tokens its reveal rule covers, of its own tenant', async () => {
      const s = setUp();
      s.tokens.rows.set('card', token('card'));
      s.tokens.rows.set('bank', token('bank', { type: 'bank', containers: ['/bank/high/'], mask: null }));
      s.tokens.rows.set('theirs', token('theirs', { tenant_id: OTHER_TENANT }));
      const page = await s.search.search(
        origin([], [REVEAL, { priority: 2, container: '/bank/', permissions: ['token:search'] }]),
        { query: 'type:card OR type:bank', page: 1, size: 10 },
      );
      expect(page.data.map((t) => t.id).sort()).toEqual(['bank', 'card']);
      expect(s.searched[0].scope).toMatchObject({ permission: 'token:search' });
      expect(s.work.audit.map((entry) => [entry.operation, entry.entityId])).toEqual([['reveal', 'card']]);
    });
  });

  describe('for other modules', () => {
    it('readableTokens reads and counts in the change it is given', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1'));
      s.tokens.rows.set('t2', token('t2', { containers: ['/bank/high/'] }));
      const theirs = { mode: 'transaction' } as Change;
      const readable = await s.service.readableTokens(
        principal([], [{ priority: 1, container: '/pci/', permissions: ['token:read'] }]),
        ['t1', 't2', 't1', 'absent'],
        theirs,
      );
      expect([...readable]).toEqual(['t1']);
      expect(s.tokens.changes).toEqual([theirs]);
      expect(s.showable).toEqual([{ ids: ['t1'], change: theirs }]);
    });

    it('forgetCvc deletes the CVC in the caller’s change; loadForUse opens data and CVC for token:use only', async () => {
      const s = setUp();
      s.tokens.rows.set('t1', token('t1'));
      s.tokens.cvcs.set('t1', sealCvc(KEYS, token('t1'), '123'));
      expect(await s.service.loadForUse(principal(['token:read']), 't1')).toBeUndefined();
      const usable = await s.service.loadForUse(principal(['token:use']), 't1');
      expect(usable).toMatchObject({ id: 't1', data: CARD, cvc: '123' });
      const theirs = { mode: 'transaction' } as Change;
      await s.service.forgetCvc(theirs, TENANT, 't1');
      expect(s.tokens.cvcs.has('t1')).toBe(false);
      expect(s.tokens.changes).toEqual([theirs]);
    });
  });
});
