import { checkGrants, escalations } from './grants';

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

describe('escalations', () => {
  const flat = { permissions: ['token:create', 'token:read'], rules: [] };

  it('allows flat and rule grants the holder has flat', () => {
    expect(
      escalations(flat, ['token:create'], [{ priority: 1, container: '/pci/', permissions: ['token:read'] }]),
    ).toEqual({});
    expect(
      escalations(
        flat,
        [],
        [
          {
            priority: 1,
            conditions: [{ attribute: 'id', operator: 'equals', value: 'x' }],
            permissions: ['token:read'],
          },
        ],
      ),
    ).toEqual({});
  });

  it('names each permission the holder lacks', () => {
    expect(
      escalations(flat, ['token:delete'], [{ priority: 1, container: '/a/', permissions: ['token:use'] }]),
    ).toEqual({
      'permissions[0]': [
        'permission token:delete is not held by the authorizing application on every container',
      ],
      'rules[0].permissions[0]': ['permission token:use is not held by the authorizing application on /a/'],
    });
  });

  it('allows a container grant only inside a container the holder covers, honouring rule priority', () => {
    const holder = {
      permissions: [],
      rules: [
        { priority: 1, container: '/pci/high/', permissions: ['token:create'] },
        { priority: 2, container: '/pci/', permissions: ['token:read', 'token:create'] },
      ],
    };
    const grant = (container: string) =>
      escalations(holder, [], [{ priority: 1, container, permissions: ['token:read'] }]);
    expect(grant('/pci/low/')).toEqual({});
    // /pci/ includes /pci/high/, where the holder's first matching rule refuses token:read.
    expect(Object.keys(grant('/pci/'))).toEqual(['rules[0].permissions[0]']);
    expect(Object.keys(grant('/bank/'))).toEqual(['rules[0].permissions[0]']);
    expect(escalations(holder, ['token:read'])).toHaveProperty(['permissions[0]']);
    // A container condition confines a session rule like a container does.
    expect(
      escalations(
        holder,
        [],
        [
          {
            priority: 1,
            conditions: [{ attribute: 'container', operator: 'starts_with', value: '/pci/low/' }],
            permissions: ['token:create'],
          },
        ],
      ),
    ).toEqual({});
  });

  it('lets a session reveal only where the holder reveals the whole container with each permission', () => {
    const reveal = (priority: number, container: string, permissions: string[]) => ({
      priority,
      container,
      permissions,
      transform: 'reveal' as const,
    });
    const holder = {
      permissions: ['token:use'],
      rules: [
        { priority: 1, container: '/pci/high/secret/', permissions: ['token:read'] },
        reveal(2, '/pci/', ['token:read', 'token:search', 'token:use']),
        reveal(3, '/bank/high/', ['token:read']),
        { priority: 4, container: '/general/', permissions: ['token:read'], transform: 'mask' as const },
      ],
    };
    const grant = (rule: Record<string, unknown>) =>
      escalations(holder, [], [{ priority: 1, permissions: ['token:read'], transform: 'reveal', ...rule }]);
    expect(grant({ container: '/pci/low/' })).toEqual({});
    expect(grant({ container: '/pci/low/', permissions: ['token:read', 'token:search'] })).toEqual({});
    // /pci/ includes /pci/high/secret/, which an earlier rule decides without reveal.
    expect(Object.keys(grant({ container: '/pci/' }))).toEqual(['rules[0].transform']);
    expect(Object.keys(grant({ container: '/pci/high/' }))).toEqual(['rules[0].transform']);
    // Only a narrower container revealed, only masked, or the permission held flat (flat never reveals).
    expect(Object.keys(grant({ container: '/bank/' }))).toEqual([
      'rules[0].permissions[0]',
      'rules[0].transform',
    ]);
    expect(Object.keys(grant({ container: '/general/' }))).toEqual(['rules[0].transform']);
    expect(grant({ container: '/pci/low/', permissions: ['token:use'] })).toEqual({
      'rules[0].transform': [
        'reveal needs the authorizing application to hold a reveal rule with token:use deciding all of /pci/low/',
      ],
    });
    // Conditions confined to a container path count as that container; any other conditions, as all.
    expect(
      grant({ conditions: [{ attribute: 'container', operator: 'starts_with', value: '/bank/high/' }] }),
    ).toEqual({});
    expect(
      Object.keys(
        grant({
          conditions: [{ attribute: 'type', operator: 'equals', value: 'card' }],
          permissions: ['token:use'],
        }),
      ),
    ).toEqual(['rules[0].transform']);
  });
});

describe('escalations and the root container /', () => {
  const read = (container: string) => ({ priority: 1, container, permissions: ['token:read'] });

  it('a session rule on / needs the permission on every container', () => {
    expect(escalations({ permissions: ['token:read'], rules: [] }, [], [read('/')])).toEqual({});
    expect(escalations({ permissions: [], rules: [read('/')] }, [], [read('/')])).toEqual({});
    expect(escalations({ permissions: [], rules: [read('/')] }, [], [read('/pci/')])).toEqual({});
    expect(escalations({ permissions: [], rules: [read('/pci/')] }, [], [read('/')])).toEqual({
      'rules[0].permissions[0]': ['permission token:read is not held by the authorizing application on /'],
    });
    // A narrower rule before the one on / that refuses the permission refuses some token under /.
    const refusedBelow = {
      permissions: [],
      rules: [{ ...read('/pci/'), priority: 0, permissions: [] }, read('/')],
    };
    expect(Object.keys(escalations(refusedBelow, [], [read('/')]))).toEqual(['rules[0].permissions[0]']);
  });

  it('reveal with conditions other than a container needs a reveal rule on / (every container)', () => {
    const byType = {
      priority: 1,
      conditions: [{ attribute: 'type' as const, operator: 'equals' as const, value: 'card' }],
      permissions: ['token:read'],
      transform: 'reveal' as const,
    };
    expect(
      escalations({ permissions: [], rules: [{ ...read('/'), transform: 'reveal' }] }, [], [byType]),
    ).toEqual({});
    expect(
      Object.keys(
        escalations({ permissions: [], rules: [{ ...read('/pci/'), transform: 'reveal' }] }, [], [byType]),
      ),
    ).toEqual(['rules[0].permissions[0]', 'rules[0].transform']);
  });
});

describe('checkGrants and reveal', () => {
  it('allows reveal on private applications (and sessions) only', () => {
    const rules = [
      { priority: 1, container: '/pci/', permissions: ['token:create'], transform: 'reveal' as const },
    ];
    expect(checkGrants('private', [], rules)).toEqual({});
    expect(checkGrants('public', [], rules)).toEqual({
      'rules[0].transform': ['reveal is not allowed for public applications'],
    });
    expect(checkGrants('management', [], [{ ...rules[0], permissions: ['log:read'] }])).toHaveProperty([
      'rules[0].transform',
    ]);
  });
});
