import { FakeUnitOfWork } from '../../../test/support/fake-unit-of-work';
import { hashApiKey } from '../../common/auth/api-key';
import type { Principal } from '../../common/auth/principal';
import { ValidationException } from '../../common/errors/domain.exception';
import { Clock } from '../../common/jobs/clock';
import type { RetentionJob } from '../../common/jobs/retention.job';
import type { Change } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import type { NewSession, SessionGrant, SessionsRepository } from './sessions.repository';
import { MAX_SESSION_LIFETIME_MS, SESSION_LIFETIME_MS, SessionsService } from './sessions.service';

const TENANT = '00000000-0000-4000-8000-0000000000a1';
const OTHER_TENANT = '00000000-0000-4000-8000-0000000000b1';
const PUBLIC_APP = '00000000-0000-4000-8000-000000000001';
const PRIVATE_APP = '00000000-0000-4000-8000-000000000002';

/** The service's clock, stopped at a fixed instant: it moves only when a test advances it. */
class StoppedClock extends Clock {
  private at = Date.parse('2026-11-26T12:00:00.000Z');

  override now(): Date {
    return new Date(this.at);
  }

  override advance(ms: number): void {
    this.at += ms;
  }
}

interface StoredSession extends NewSession {
  grant?: SessionGrant;
}

/** `sessions` in memory; a nonce is consumed by the grant, as the UPDATE does. */
class FakeSessions {
  readonly rows = new Map<string, StoredSession>();
  readonly calls: string[] = [];

  readonly repository = {
    insert: async (_change: Change, session: NewSession) => {
      this.calls.push('insert');
      this.rows.set(session.id, { ...session });
    },
    lockPendingByNonce: async (_change: Change, tenantId: string, nonceHash: Buffer, now: Date) => {
      this.calls.push('lock');
      const row = [...this.rows.values()].find(
        (s) =>
          s.tenantId === tenantId &&
          s.nonceHash.length > 0 &&
          s.nonceHash.equals(nonceHash) &&
          s.expiresAt.getTime() > now.getTime(),
      );
      return row && { id: row.id, createdAt: row.createdAt, expiresAt: row.expiresAt };
    },
    authorize: async (_change: Change, tenantId: string, id: string, grant: SessionGrant) => {
      this.calls.push('authorize');
      const row = this.rows.get(id)!;
      expect(row.tenantId).toBe(tenantId);
      this.rows.set(id, { ...row, nonceHash: Buffer.alloc(0), expiresAt: grant.expiresAt, grant });
    },
  } as unknown as SessionsRepository;
}

const principal = (overrides: Partial<Principal>): Principal => ({
  tenantId: TENANT,
  applicationId: PUBLIC_APP,
  applicationType: 'public',
  keyKind: 'public',
  keyId: 'k',
  authorized: true,
  permissions: ['token:create'],
  rules: [],
  ...overrides,
});

const publicKey = (overrides: Partial<Principal> = {}): RequestOrigin => ({ actor: principal(overrides) });
const privateKey = (overrides: Partial<Principal> = {}): RequestOrigin => ({
  actor: principal({
    applicationId: PRIVATE_APP,
    applicationType: 'private',
    keyKind: 'private',
    permissions: ['token:read', 'token:create'],
    ...overrides,
  }),
});

function setup() {
  const store = new FakeSessions();
  const work = new FakeUnitOfWork();
  const clock = new StoppedClock();
  const register = jest.fn();
  const retention = { register } as unknown as RetentionJob;
  const service = new SessionsService(work.asUnitOfWork(), store.repository, clock, retention);
  return { store, work, clock, service, register };
}

describe('SessionsService', () => {
  it('creates a session without access, storing only digests of its key and nonce', async () => {
    const { service, store, work, clock } = setup();
    const created = await service.create(publicKey());
    const row = store.rows.get(created.id)!;
    expect(row).toMatchObject({ tenantId: TENANT, applicationId: PUBLIC_APP });
    expect(row.keyHash.equals(hashApiKey(created.session_key))).toBe(true);
    expect(row.nonceHash.equals(hashApiKey(created.nonce))).toBe(true);
    expect(JSON.stringify([...store.rows.values()])).not.toContain(created.session_key);
    expect(row.grant).toBeUndefined();
    expect(new Date(created.expires_at).getTime()).toBe(clock.now().getTime() + SESSION_LIFETIME_MS);
    expect(work.committed).toHaveLength(1);
    expect(work.audit).toEqual([
      { entityType: 'session', entityId: created.id, operation: 'create', message: 'Session created' },
    ]);
  });

  it('every call makes a new session and key', async () => {
    const { service } = setup();
    const [a, b] = [await service.create(publicKey()), await service.create(publicKey())];
    expect(a.id).not.toBe(b.id);
    expect(a.session_key).not.toBe(b.session_key);
  });

  it('authorizes with the nonce: grants, consumes it, and logs what was granted', async () => {
    const { service, store, work } = setup();
    const created = await service.create(publicKey());
    const answer = await service.authorize(privateKey(), {
      nonce: created.nonce,
      permissions: ['token:read'],
      rules: [{ priority: 1, container: '/general/', permissions: ['token:read'] }],
    });
    expect(answer).toEqual({ id: created.id });
    expect(store.calls).toEqual(['insert', 'lock', 'authorize']);
    expect(store.rows.get(created.id)!.grant).toMatchObject({
      permissions: ['token:read'],
      authorizedBy: PRIVATE_APP,
    });
    expect(work.audit[1]).toEqual({
      entityType: 'session',
      entityId: created.id,
      operation: 'update',
      message: 'Session authorized with permissions token:read and 1 rule',
    });
  });

  it('a nonce works once', async () => {
    const { service, work } = setup();
    const created = await service.create(publicKey());
    await service.authorize(privateKey(), { nonce: created.nonce, permissions: ['token:read'] });
    await expect(
      service.authorize(privateKey(), { nonce: created.nonce, permissions: ['token:read'] }),
    ).rejects.toBeInstanceOf(ValidationException);
    expect(work.rolledBack).toHaveLength(1);
    expect(work.audit).toHaveLength(2);
  });

  it('refuses an expired nonce', async () => {
    const { service, clock } = setup();
    const created = await service.create(publicKey());
    clock.advance(SESSION_LIFETIME_MS);
    await expect(
      service.authorize(privateKey(), { nonce: created.nonce, permissions: ['token:read'] }),
    ).rejects.toMatchObject({ errors: { nonce: [expect.any(String)] } });
  });

  it('never authorizes another tenant’s session', async () => {
    const { service, store } = setup();
    const created = await service.create(publicKey());
    await expect(
      service.authorize(privateKey({ tenantId: OTHER_TENANT }), {
        nonce: created.nonce,
        permissions: ['token:read'],
      }),
    ).rejects.toBeInstanceOf(ValidationException);
    expect(store.rows.get(created.id)!.grant).toBeUndefined();
  });

  it('refuses a grant the private application does not hold, before any change opens', async () => {
    const { service, work } = setup();
    const created = await service.create(publicKey());
    await expect(
      service.authorize(privateKey(), { nonce: created.nonce, permissions: ['token:delete'] }),
    ).rejects.toBeInstanceOf(ValidationException);
    expect(work.committed).toHaveLength(1);
    expect(work.rolledBack).toHaveLength(0);
  });

  it('refuses to grant nothing', async () => {
    const { service } = setup();
    const created = await service.create(publicKey());
    await expect(
      service.authorize(privateKey(), { nonce: created.nonce, permissions: [], rules: [] }),
    ).rejects.toMatchObject({ errors: { permissions: [expect.any(String)] } });
  });

  it('takes expires_at within 24 hours of the creation, and refuses one in the past or later', async () => {
    const { service, store, clock } = setup();
    const created = await service.create(publicKey());
    const createdAt = clock.now().getTime();
    const grant = (expires: number) =>
      service.authorize(privateKey(), {
        nonce: created.nonce,
        permissions: ['token:read'],
        expires_at: new Date(expires).toISOString(),
      });
    await expect(grant(createdAt - 1000)).rejects.toMatchObject({
      errors: { expires_at: [expect.any(String)] },
    });
    await expect(grant(createdAt + MAX_SESSION_LIFETIME_MS + 1000)).rejects.toMatchObject({
      errors: { expires_at: [expect.stringContaining('24 hours')] },
    });
    await grant(createdAt + 3_600_000);
    expect(store.rows.get(created.id)!.expiresAt.getTime()).toBe(createdAt + 3_600_000);
  });

  it('a refused authorization rolls back: no audit row, and the nonce still works', async () => {
    const { service, store, work, clock } = setup();
    const created = await service.create(publicKey());
    await expect(
      service.authorize(privateKey(), {
        nonce: created.nonce,
        permissions: ['token:read'],
        expires_at: new Date(clock.now().getTime() - 1000).toISOString(),
      }),
    ).rejects.toBeInstanceOf(ValidationException);
    expect(work.rolledBack).toHaveLength(1);
    expect(work.rolledBack[0].entries).toEqual([]);
    expect(store.calls).not.toContain('authorize');
    await service.authorize(privateKey(), { nonce: created.nonce, permissions: ['token:read'] });
    expect(store.rows.get(created.id)!.grant).toBeDefined();
  });

  it('a rule the private application holds no permission of is refused by path', async () => {
    const { service } = setup();
    const created = await service.create(publicKey());
    await expect(
      service.authorize(privateKey(), {
        nonce: created.nonce,
        rules: [{ priority: 1, container: '/general/', permissions: ['token:delete'] }],
      }),
    ).rejects.toMatchObject({ errors: { 'rules[0].permissions[0]': [expect.any(String)] } });
  });

  it('opens each change with the request’s origin, whose actor the audit rows name', async () => {
    const { service, work } = setup();
    const origin = privateKey();
    const created = await service.create(publicKey());
    await service.authorize(origin, { nonce: created.nonce, permissions: ['token:read'] });
    expect(work.committed.map((change) => change.actor.applicationId)).toEqual([PUBLIC_APP, PRIVATE_APP]);
    expect(work.committed[1].origin).toBe(origin);
  });

  it('registers the purge of expired sessions with the retention job', () => {
    const { service, register } = setup();
    service.onModuleInit();
    expect(register).toHaveBeenCalledWith(expect.objectContaining({ name: 'expired-sessions' }));
  });
});
