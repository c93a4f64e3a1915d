import type { Principal } from '../../../common/auth/principal';
import { decide, mayEvaluateStoredData, refusedContainers } from './token-access';
import { accessPredicate } from '../search/token-search.repository';
import { SqlParams } from '../../../database/sql';

const principal = (over: Partial<Principal>): Principal => ({
  tenantId: 't',
  applicationId: 'a',
  applicationType: 'private',
  keyKind: 'private',
  keyId: 'k',
  authorized: true,
  permissions: [],
  rules: [],
  ...over,
});

const card = { id: '11111111-1111-1111-1111-111111111111', type: 'card', containers: ['/pci/high/'] };

describe('decide', () => {
  it('lets flat permissions cover every container', () => {
    expect(decide(principal({ permissions: ['token:read'] }), 'token:read', card)).toEqual({
      allowed: true,
      matched: true,
      transform: 'mask',
    });
  });

  it('lets a container rule cover its sub-containers, and the first rule by priority decide', () => {
    const who = principal({
      rules: [
        { priority: 2, container: '/pci/', permissions: ['token:read'], transform: 'redact' },
        { priority: 1, container: '/pci/high/', permissions: ['token:update'] },
      ],
    });
    expect(decide(who, 'token:read', card)).toEqual({ allowed: false, matched: true, transform: 'mask' });
    expect(decide(who, 'token:update', card).allowed).toBe(true);
    expect(decide(who, 'token:read', { ...card, containers: ['/pci/low/'] })).toEqual({
      allowed: true,
      matched: true,
      transform: 'redact',
    });
    expect(decide(who, 'token:read', { ...card, containers: ['/general/'] })).toEqual({
      allowed: false,
      matched: false,
      transform: 'mask',
    });
  });

  it('evaluates session conditions on id, type and container', () => {
    const who = principal({
      rules: [
        {
          priority: 1,
          conditions: [{ attribute: 'id', operator: 'equals', value: card.id }],
          permissions: ['token:read'],
        },
      ],
    });
    expect(decide(who, 'token:read', card).allowed).toBe(true);
    expect(decide(who, 'token:read', { ...card, id: '22222222-2222-2222-2222-222222222222' }).matched).toBe(
      false,
    );
    const byType = principal({
      rules: [
        {
          priority: 1,
          conditions: [
            { attribute: 'type', operator: 'equals', value: 'card' },
            { attribute: 'container', operator: 'starts_with', value: '/pci/' },
          ],
          permissions: ['token:use'],
        },
      ],
    });
    expect(decide(byType, 'token:use', card).allowed).toBe(true);
    expect(decide(byType, 'token:use', { ...card, type: 'bank' }).allowed).toBe(false);
  });
});

describe('the root container /', () => {
  const inRoot = { id: 'my-token_1', type: 'token', containers: ['/'] };
  const rootRule = { priority: 1, container: '/', permissions: ['token:read'] };

  it('a rule on / covers every container, the root included', () => {
    const who = principal({ rules: [rootRule] });
    for (const token of [inRoot, card, { ...card, containers: ['/a/b/c/'] }])
      expect(decide(who, 'token:read', token)).toEqual({ allowed: true, matched: true, transform: 'mask' });
  });

  it('a token in / is reached by flat permissions or a rule on / only', () => {
    const pci = principal({ rules: [{ ...rootRule, container: '/pci/' }] });
    expect(decide(pci, 'token:read', inRoot)).toEqual({ allowed: false, matched: false, transform: 'mask' });
    expect(decide(principal({ permissions: ['token:read'] }), 'token:read', inRoot).allowed).toBe(true);
    const narrowerFirst = principal({
      rules: [{ priority: 0, container: '/pci/', permissions: ['token:update'] }, rootRule],
    });
    expect(decide(narrowerFirst, 'token:read', card).allowed).toBe(false);
    expect(decide(narrowerFirst, 'token:read', inRoot).allowed).toBe(true);
  });

  it('session conditions: container equals / matches only the root, starts_with / everything', () => {
    const condition = (operator: 'equals' | 'starts_with') =>
      principal({
        rules: [
          {
            priority: 1,
            conditions: [{ attribute: 'container', operator, value: '/' }],
            permissions: ['token:read'],
          },
        ],
      });
    expect(decide(condition('equals'), 'token:read', inRoot).allowed).toBe(true);
    expect(decide(condition('equals'), 'token:read', card).matched).toBe(false);
    expect(decide(condition('starts_with'), 'token:read', card).allowed).toBe(true);
  });

  it('token:create in / needs a rule on /', () => {
    const who = principal({
      applicationType: 'public',
      rules: [{ priority: 1, container: '/general/', permissions: ['token:create'] }],
    });
    expect(refusedContainers(who, { ...inRoot, containers: ['/', '/general/'] })).toEqual(['/']);
    const root = principal({ rules: [{ ...rootRule, permissions: ['token:create'] }] });
    expect(refusedContainers(root, { ...inRoot, containers: ['/', '/general/'] })).toEqual([]);
  });
});

describe('reveal', () => {
  const revealPci = {
    priority: 1,
    container: '/pci/',
    permissions: ['token:read'],
    transform: 'reveal' as const,
  };

  it('reveals through the deciding rule only; flat permissions never reveal', () => {
    const who = principal({
      rules: [{ priority: 0, container: '/pci/low/', permissions: ['token:read'] }, revealPci],
    });
    expect(decide(who, 'token:read', card).transform).toBe('reveal');
    expect(decide(who, 'token:read', { ...card, containers: ['/pci/low/'] }).transform).toBe('mask');
    expect(mayEvaluateStoredData(who, card)).toBe(true);
    expect(mayEvaluateStoredData(who, { ...card, containers: ['/pci/low/'] })).toBe(false);
    const flat = principal({ permissions: ['token:read'], rules: [revealPci] });
    expect(decide(flat, 'token:read', card)).toEqual({ allowed: true, matched: true, transform: 'mask' });
    expect(mayEvaluateStoredData(flat, card)).toBe(false);
  });

  it('reveals to a session only what its authorizer reveals of the same token now', () => {
    const session = principal({ applicationType: 'public', keyKind: 'session', rules: [revealPci] });
    const authorizer = { permissions: [], rules: [revealPci] };
    expect(decide({ ...session, authorizer }, 'token:read', card).transform).toBe('reveal');
    // A token also in /bank/, which the authorizer's earlier rule decides (masked, or refused).
    const both = { ...card, containers: ['/pci/high/', '/bank/high/'] };
    const bankFirst = {
      permissions: [],
      rules: [{ priority: 0, container: '/bank/', permissions: ['token:read'] }, revealPci],
    };
    expect(decide({ ...session, authorizer: bankFirst }, 'token:read', both)).toEqual({
      allowed: true,
      matched: true,
      transform: 'mask',
    });
    // The authorizer since lost its reveal rule, or holds the permission flat.
    expect(
      decide({ ...session, authorizer: { permissions: [], rules: [] } }, 'token:read', card).transform,
    ).toBe('mask');
    expect(
      decide(
        { ...session, authorizer: { permissions: ['token:read'], rules: [revealPci] } },
        'token:read',
        card,
      ).transform,
    ).toBe('mask');
  });
});

describe('a session decided by its authorizer too, token by token', () => {
  const PERMISSIONS = ['token:read', 'token:use', 'token:update', 'token:delete', 'token:search'];
  const session = principal({
    applicationType: 'public',
    keyKind: 'session',
    rules: [{ priority: 1, container: '/pci/', permissions: PERMISSIONS }],
  });
  // The attack: the authorizer's rule on /secret/ comes first and withholds everything but create.
  const authorizer = {
    permissions: [],
    rules: [
      { priority: 1, container: '/secret/', permissions: ['token:create'] },
      { priority: 2, container: '/pci/', permissions: ['token:create', ...PERMISSIONS] },
    ],
  };
  const both = { ...card, containers: ['/secret/', '/pci/'] };
  const pci = { ...card, containers: ['/pci/'] };

  it('refuses every permission on a token the authorizer is refused, as the authorizer is (403)', () => {
    for (const permission of PERMISSIONS) {
      expect(decide(authorizer, permission, both)).toEqual({
        allowed: false,
        matched: true,
        transform: 'mask',
      });
      expect(decide({ ...session, authorizer }, permission, both)).toEqual({
        allowed: false,
        matched: true,
        transform: 'mask',
      });
      expect(decide({ ...session, authorizer }, permission, pci).allowed).toBe(true);
    }
  });

  it('leaves a token the authorizer has no grant over unknown (404), and follows its flat permissions', () => {
    const elsewhere = {
      permissions: [],
      rules: [{ priority: 1, container: '/bank/', permissions: PERMISSIONS }],
    };
    expect(decide({ ...session, authorizer: elsewhere }, 'token:read', pci)).toEqual({
      allowed: false,
      matched: false,
      transform: 'mask',
    });
    const flat = { permissions: ['token:read'], rules: authorizer.rules };
    expect(decide({ ...session, authorizer: flat }, 'token:read', both).allowed).toBe(true);
    expect(decide({ ...session, authorizer: flat }, 'token:use', both).allowed).toBe(false);
  });

  it("never lets the authorizer's grants widen the session's own", () => {
    const wide = { permissions: PERMISSIONS, rules: [] };
    expect(
      decide({ ...session, authorizer: wide }, 'token:read', { ...card, containers: ['/bank/'] }),
    ).toEqual({ allowed: false, matched: false, transform: 'mask' });
    expect(mayEvaluateStoredData({ ...session, authorizer: wide }, pci)).toBe(false);
  });

  it("filters lists and searches in SQL by both: the authorizer's CASE is ANDed, its parameters numbered after", () => {
    const params = new SqlParams();
    params.add('tenant');
    const sql = accessPredicate({ ...session, authorizer }, 'token:read', params);
    expect(sql).toBe(
      '((CASE WHEN EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE left(c, char_length($2::text)) = $2::text) THEN TRUE ELSE FALSE END)' +
        ' AND (CASE WHEN EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE left(c, char_length($3::text)) = $3::text) THEN FALSE' +
        ' WHEN EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE left(c, char_length($4::text)) = $4::text) THEN TRUE ELSE FALSE END))',
    );
    expect(params.values).toEqual(['tenant', '/pci/', '/secret/', '/pci/']);
    // An authorizer holding the permission nowhere: nothing, and no parameter left unused.
    const none = new SqlParams();
    none.add('tenant');
    expect(
      accessPredicate({ ...session, authorizer: { permissions: [], rules: [] } }, 'token:read', none),
    ).toBe('FALSE');
    expect(none.values).toEqual(['tenant']);
    // Flat on the authorizer: the session's own predicate alone.
    const flat = new SqlParams();
    accessPredicate(
      { ...session, authorizer: { permissions: ['token:read'], rules: [] } },
      'token:read',
      flat,
    );
    expect(flat.values).toEqual(['/pci/']);
  });
});

describe('refusedContainers', () => {
  it('names each destination container token:create is not granted on', () => {
    const who = principal({
      applicationType: 'public',
      rules: [{ priority: 1, container: '/general/', permissions: ['token:create'] }],
    });
    expect(refusedContainers(who, { id: 'x', type: 'token', containers: ['/general/high/'] })).toEqual([]);
    expect(
      refusedContainers(who, { id: 'x', type: 'card', containers: ['/pci/high/', '/general/'] }),
    ).toEqual(['/pci/high/']);
  });
});
