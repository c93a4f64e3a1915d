import type { Principal } from '../../common/auth/principal';
import { decide, refusedContainers } from './token-access';

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
