import { checkGrants } from './grants';

describe('checkGrants', () => {
  it('accepts permissions allowed for the type', () => {
    expect(checkGrants('private', ['token:read', 'token:use'])).toEqual({});
    expect(checkGrants('public', ['token:create', 'token:update'])).toEqual({});
    expect(checkGrants('management', ['log:read', 'application:create'])).toEqual({});
  });

  it('names each unknown or disallowed permission by path', () => {
    expect(checkGrants('public', ['token:create', 'token:read', 'x'])).toEqual({
      'permissions[1]': ['permission token:read is not allowed for public applications'],
      'permissions[2]': ['unknown permission x'],
    });
  });

  it('checks rule permissions, container-or-conditions, and unique priorities', () => {
    const errors = checkGrants(
      'private',
      [],
      [
        { priority: 1, container: '/pci/', permissions: ['token:read'] },
        { priority: 1, container: '/bank/', permissions: ['log:read'] },
        { priority: 2, permissions: ['token:read'] },
        {
          priority: 3,
          container: '/pci/',
          conditions: [{ attribute: 'id', operator: 'equals', value: 'a' }],
          permissions: ['token:read'],
        },
      ],
    );
    expect(errors).toEqual({
      'rules[1].permissions[0]': ['permission log:read is not allowed for private applications'],
      'rules[1].priority': ['priority 1 is already used by rules[0]'],
      'rules[2]': ['a rule needs a container or conditions'],
      'rules[3].conditions': ['conditions are only allowed on session rules'],
      'rules[3]': ['a rule has a container or conditions, not both'],
    });
  });

  it('allows conditions where the caller permits them (sessions)', () => {
    const rules = [
      {
        priority: 1,
        conditions: [{ attribute: 'id' as const, operator: 'equals' as const, value: 'a' }],
        permissions: ['token:read'],
      },
    ];
    expect(checkGrants('private', [], rules, { allowConditions: true })).toEqual({});
  });
});
