import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { hashApiKey } from '../../common/auth/api-key';
import type { Principal } from '../../common/auth/principal';
import { ValidationException } from '../../common/errors/domain.exception';
import { Clock } from '../../common/jobs/clock';
import type { RetentionJob } from '../../common/jobs/retention.job';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { SessionsRepository } from './sessions.repository';
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

let db: ServiceDatabase;

beforeAll(async () => {
  db = await openServiceDatabase();
  await db.newTenant('sessions', TENANT);
  await db.newTenant('other', OTHER_TENANT);
  for (const [id, type, permissions] of [
    [PUBLIC_APP, 'public', ['token:create']],
    [PRIVATE_APP, 'private', ['token:read', 'token:create']],
  ] as const)
    await db.rows(
      'INSERT INTO applications (id, tenant_id, name, type, permissions) VALUES ($1, $2, $3, $3, $4)',
      [id, TENANT, type, permissions],
    );
});
afterAll(() => db.close());

/** A session as the database holds it. */
const stored = async (id: string) =>
  (
    await db.rows<{
      tenant_id: string;
      application_id: string;
      key_hash: Buffer;
      nonce_hash: Buffer | null;
      permissions: string[];
      authorized_by: string | null;
      expires_at: Date;
    }>(
      'SELECT tenant_id, application_id, key_hash, nonce_hash, permissions, authorized_by, expires_at FROM sessions WHERE id = $1',
      [id],
    )
  )[0];

/** The audit rows of a session, oldest first. */
const auditOf = (id: string) =>
  db.rows<{ actor_id: string; entity_type: string; entity_id: string; operation: string; message: string }>(
    `SELECT actor_id, entity_type, entity_id, operation, message FROM audit_logs WHERE entity_id = $1
      ORDER BY created_at, ctid`,
    [id],
  );

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
  const clock = new StoppedClock();
  const register = jest.fn();
  const retention = { register } as unknown as RetentionJob;
  const service = new SessionsService(db.work, new SessionsRepository(db.dataSource), clock, retention);
  return { clock, service, register };
}

describe('SessionsService (real repository on PGlite)', () => {
  it('creates a session without access, storing only digests of its key and nonce', async () => {
    const { service, clock } = setup();
    const created = await service.create(publicKey());
    const row = await stored(created.id);
    expect(row).toMatchObject({
      tenant_id: TENANT,
      application_id: PUBLIC_APP,
      permissions: [],
      authorized_by: null,
    });
    expect(row.key_hash.equals(hashApiKey(created.session_key))).toBe(true);
    expect(row.nonce_hash!.equals(hashApiKey(created.nonce))).toBe(true);
    expect(JSON.stringify(await db.rows('SELECT * FROM sessions'))).not.toContain(created.session_key);
    expect(new Date(created.expires_at).getTime()).toBe(clock.now().getTime() + SESSION_LIFETIME_MS);
    expect(await auditOf(created.id)).toEqual([
      {
        actor_id: PUBLIC_APP,
        entity_type: 'session',
        entity_id: created.id,
        operation: 'create',
        message: 'Session created',
      },
    ]);
  });

  it('every call makes a new session and key', async () => {
    const { service } = setup();
    const [a, b] = [await service.create(publicKey()), await service.create(publicKey())];
    expect(a.id).not.toBe(b.id);
    expect(a.session_key).not.toBe(b.session_key);
  });

  it('authorizes with the nonce: grants, consumes it, and logs what was granted', async () => {
    const { service } = setup();
    const created = await service.create(publicKey());
    const answer = await service.authorize(privateKey(), {
      nonce: created.nonce,
      permissions: ['token:read'],
      rules: [{ priority: 1, container: '/general/', permissions: ['token:read'] }],
    });
    expect(answer).toEqual({ id: created.id });
    expect(await stored(created.id)).toMatchObject({
      permissions: ['token:read'],
      authorized_by: PRIVATE_APP,
      nonce_hash: null,
    });
    expect((await auditOf(created.id))[1]).toEqual({
      actor_id: PRIVATE_APP,
      entity_type: 'session',
      entity_id: created.id,
      operation: 'update',
      message: 'Session authorized with permissions token:read and 1 rule',
    });
  });

  it('a nonce works once', async () => {
    const { service } = setup();
    const created = await service.create(publicKey());
    await service.authorize(privateKey(), { nonce: created.nonce, permissions: ['token:read'] });
    await expect(
      service.authorize(privateKey(), { nonce: created.nonce, permissions: ['token:read'] }),
    ).rejects.toBeInstanceOf(ValidationException);
    expect(await auditOf(created.id)).toHaveLength(2);
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
    const { service } = setup();
    const created = await service.create(publicKey());
    await expect(
      service.authorize(privateKey({ tenantId: OTHER_TENANT }), {
        nonce: created.nonce,
        permissions: ['token:read'],
      }),
    ).rejects.toBeInstanceOf(ValidationException);
    expect(await stored(created.id)).toMatchObject({ authorized_by: null, permissions: [] });
  });

  it('refuses a grant the private application does not hold, before any change opens', async () => {
    const { service } = setup();
    const created = await service.create(publicKey());
    await expect(
      service.authorize(privateKey(), { nonce: created.nonce, permissions: ['token:delete'] }),
    ).rejects.toBeInstanceOf(ValidationException);
    expect(await auditOf(created.id)).toHaveLength(1);
    expect(await stored(created.id)).toMatchObject({ authorized_by: null });
  });

  it('refuses to grant nothing', async () => {
    const { service } = setup();
    const created = await service.create(publicKey());
    await expect(
      service.authorize(privateKey(), { nonce: created.nonce, permissions: [], rules: [] }),
    ).rejects.toMatchObject({ errors: { permissions: [expect.any(String)] } });
  });

  it('takes expires_at within 24 hours of the creation, and refuses one in the past or later', async () => {
    const { service, clock } = setup();
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
    expect((await stored(created.id)).expires_at.getTime()).toBe(createdAt + 3_600_000);
  });

  it('a refused authorization rolls back: no audit row, and the nonce still works', async () => {
    const { service, clock } = setup();
    const created = await service.create(publicKey());
    await expect(
      service.authorize(privateKey(), {
        nonce: created.nonce,
        permissions: ['token:read'],
        expires_at: new Date(clock.now().getTime() - 1000).toISOString(),
      }),
    ).rejects.toBeInstanceOf(ValidationException);
    expect(await auditOf(created.id)).toHaveLength(1);
    expect(await stored(created.id)).toMatchObject({ authorized_by: null });
    await service.authorize(privateKey(), { nonce: created.nonce, permissions: ['token:read'] });
    expect(await stored(created.id)).toMatchObject({ authorized_by: PRIVATE_APP });
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

  it('stores the answer of a create with an idempotency key in its change', async () => {
    const { service } = setup();
    const who = publicKey().actor;
    const claim = await db.claim(who, 'session-1');
    const created = await service.create({ actor: who, idempotency: claim });
    const records = await db.rows<{ state: string; response_body: Buffer | null }>(
      `SELECT state, response_body FROM idempotency_records WHERE scope = $1`,
      [`application:${PUBLIC_APP}`],
    );
    expect(records).toEqual([expect.objectContaining({ state: 'completed' })]);
    expect(records[0].response_body?.toString('latin1') ?? '').not.toContain(created.session_key);
  });

  it('registers the purge of expired sessions with the retention job', () => {
    const { service, register } = setup();
    service.onModuleInit();
    expect(register).toHaveBeenCalledWith(expect.objectContaining({ name: 'expired-sessions' }));
  });
});
