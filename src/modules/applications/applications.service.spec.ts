import { randomBytes, randomUUID } from 'node:crypto';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import { permissionsFor } from '../../common/auth/permissions';
import type { Principal } from '../../common/auth/principal';
import { ValidationException } from '../../common/errors/domain.exception';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import type { ApplicationKeyResolver } from './application-key.resolver';
import { ApplicationsErrorCode, ApplicationsException } from './applications.errors';
import { ApplicationsRepository } from './applications.repository';
import { ApplicationsService } from './applications.service';
import type { ApplicationEntity } from './entities/application.entity';

/**
 * Applications and their keys on the real repository (the service tier's PGlite): what each write leaves
 * in the database (applications, keys, audit rows, events, the idempotency record), the refusals that
 * keep a tenant administrable, and another tenant's applications out of reach. Each test has a tenant of
 * its own, whose first management application (ADMIN) has one key.
 */
let db: ServiceDatabase;
let TENANT: string;
let OTHER_TENANT: string;
let ADMIN: string;
const SECOND_ADMIN_NAME = 'second admin';

beforeAll(async () => {
  db = await openServiceDatabase();
  OTHER_TENANT = await db.newTenant('other');
});
afterAll(() => db.close());

function admin(overrides: Partial<Principal> = {}): RequestOrigin {
  return {
    actor: {
      tenantId: TENANT,
      applicationId: ADMIN,
      applicationType: 'management',
      keyKind: 'management',
      keyId: 'k',
      authorized: true,
      permissions: permissionsFor('management'),
      rules: [],
      ...overrides,
    },
  };
}

/** The tenant's applications table, seeded by the real repository in a change of its own. */
class Store {
  constructor(private readonly repository: ApplicationsRepository) {}

  async seed(app: Partial<ApplicationEntity>, keys = 1): Promise<ApplicationEntity> {
    const full: ApplicationEntity = {
      id: randomUUID(),
      tenantId: TENANT,
      name: SECOND_ADMIN_NAME,
      type: 'management',
      permissions: permissionsFor('management'),
      rules: null,
      allowedOrigins: null,
      createdBy: null,
      createdAt: new Date('2026-01-01T00:00:00Z'),
      modifiedBy: null,
      modifiedAt: null,
      ...app,
    };
    await db.work.transaction({}, async (change) => {
      await this.repository.insert(change, full);
      for (let i = 0; i < keys; i++)
        await this.repository.insertKey(change, {
          tenantId: full.tenantId,
          id: randomUUID(),
          applicationId: full.id,
          keyHash: randomBytes(32),
          createdBy: null,
          createdAt: full.createdAt,
        });
    });
    return full;
  }

  async app(id: string) {
    return (
      await db.rows<{ name: string; permissions: string[] }>(
        'SELECT name, permissions FROM applications WHERE id = $1',
        [id],
      )
    )[0];
  }

  async keys(applicationId = ADMIN) {
    return (
      await db.rows<{ id: string }>(
        'SELECT id FROM api_keys WHERE application_id = $1 ORDER BY created_at, id',
        [applicationId],
      )
    ).map((row) => row.id);
  }
}

/** The tenant's audit rows and events so far, oldest first. */
const audit = () =>
  db.rows<{ entity_type: string; entity_id: string; operation: string; message: string }>(
    `SELECT entity_type, entity_id, operation, message FROM audit_logs WHERE tenant_id = $1
      ORDER BY created_at, ctid`,
    [TENANT],
  );
const events = () =>
  db.rows<{ type: string; entity_id: string; data: Record<string, unknown> }>(
    'SELECT type, entity_id, data FROM webhook_events WHERE tenant_id = $1 ORDER BY created_at, ctid',
    [TENANT],
  );

async function setup() {
  TENANT = await db.newTenant('applications');
  await db.subscribe(TENANT);
  const repository = new ApplicationsRepository(db.dataSource);
  const store = new Store(repository);
  ADMIN = (await store.seed({ name: 'admin' })).id;
  let invalidated = 0;
  const resolver = { invalidate: () => void invalidated++ } as unknown as ApplicationKeyResolver;
  const service = new ApplicationsService(db.work, repository, resolver);
  return { store, service, invalidated: () => invalidated };
}

const code = (error: unknown) => (error as ApplicationsException).code;

describe('ApplicationsService (real repository on PGlite)', () => {
  describe('create', () => {
    it('writes the application and its first key in one change, with its audit row and event', async () => {
      const { service, store } = await setup();
      const created = await service.create(admin(), {
        name: 'shop',
        type: 'private',
        permissions: ['token:create'],
      });
      expect(created.key).toMatch(/^key_/);
      expect(await store.app(created.id)).toEqual({ name: 'shop', permissions: ['token:create'] });
      expect(await store.keys(created.id)).toHaveLength(1);
      expect(await audit()).toEqual([
        {
          entity_type: 'application',
          entity_id: created.id,
          operation: 'create',
          message: 'Application created',
        },
      ]);
      const [event] = await events();
      expect(event).toMatchObject({ type: 'application:created', entity_id: created.id });
      // The event lists the key, never in clear.
      const data = event.data as { key?: string; keys: { id: string; key?: string }[] };
      expect(data.key).toBeUndefined();
      expect(data.keys).toEqual([expect.not.objectContaining({ key: expect.anything() })]);
      expect(JSON.stringify(await db.rows('SELECT * FROM api_keys'))).not.toContain(created.key!);
    });

    it('stores the answer with the change for a request with an idempotency key, sealed (no clear key at rest)', async () => {
      const { service } = await setup();
      const who = admin().actor;
      const claim = await db.claim(who, 'create-app', { name: 'shop' });
      const created = await service.create(
        { actor: who, idempotency: claim },
        { name: 'shop', type: 'private', permissions: ['token:create'] },
      );
      expect(created.key).toMatch(/^key_/);
      const records = await db.rows<{ state: string; response_body: Buffer | null }>(
        'SELECT state, response_body FROM idempotency_records WHERE tenant_id = $1',
        [TENANT],
      );
      expect(records).toEqual([expect.objectContaining({ state: 'completed' })]);
      expect(records[0].response_body?.toString('latin1') ?? '').not.toContain(created.key!);
    });

    it('creates no key when told not to', async () => {
      const { service, store } = await setup();
      const created = await service.create(admin(), {
        name: 'shop',
        type: 'public',
        permissions: ['token:create'],
        create_key: false,
      });
      expect(created.key).toBeUndefined();
      expect(await store.keys(created.id)).toEqual([]);
      expect(((await events())[0].data as { keys: unknown[] }).keys).toEqual([]);
    });

    it('refuses a permission the application type may not hold, before any change opens', async () => {
      const { service } = await setup();
      await expect(
        service.create(admin(), { name: 'shop', type: 'public', permissions: ['application:create'] }),
      ).rejects.toBeInstanceOf(ValidationException);
      expect(await audit()).toEqual([]);
      expect(await db.rows('SELECT id FROM applications WHERE tenant_id = $1', [TENANT])).toHaveLength(1);
    });

    it('refuses to grant a management permission the caller does not hold itself', async () => {
      const { service } = await setup();
      const who = admin({ permissions: ['application:create'] });
      const error = await service
        .create(who, { name: 'ops', type: 'management', permissions: ['application:delete'] })
        .catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.Forbidden);
      expect(await db.rows('SELECT id FROM applications WHERE tenant_id = $1', [TENANT])).toHaveLength(1);
    });

    it('createApplication joins the caller’s change and leaves the audit row to it', async () => {
      const { service } = await setup();
      const id = randomUUID();
      await db.work.transaction({}, (change) =>
        service.createApplication(change, {
          id,
          tenantId: TENANT,
          name: 'default management',
          type: 'management',
          permissions: permissionsFor('management'),
          rules: [],
          createdBy: null,
          createKey: true,
        }),
      );
      expect(await audit()).toEqual([]);
      expect(await events()).toEqual([
        expect.objectContaining({ type: 'application:created', entity_id: id }),
      ]);
    });
  });

  describe('update', () => {
    it('writes it with its audit row and event', async () => {
      const { service, store } = await setup();
      const app = await store.seed({ type: 'private', permissions: [] });
      const updated = await service.update(admin(), app.id, { name: 'renamed', permissions: ['token:read'] });
      expect(updated).toMatchObject({ name: 'renamed', permissions: ['token:read'], modified_by: ADMIN });
      expect(await store.app(app.id)).toEqual({ name: 'renamed', permissions: ['token:read'] });
      expect(await audit()).toEqual([
        {
          entity_type: 'application',
          entity_id: app.id,
          operation: 'update',
          message: 'Application updated',
        },
      ]);
      expect(await events()).toEqual([
        expect.objectContaining({ type: 'application:updated', entity_id: app.id, data: updated }),
      ]);
    });

    it('empties the key cache once the change has committed, and not when it rolled back', async () => {
      const { service, store, invalidated } = await setup();
      const app = await store.seed({ type: 'private', permissions: [] });
      await service.update(admin(), app.id, { name: 'renamed' });
      expect(invalidated()).toBe(1);
      await expect(service.update(admin(), ADMIN, { name: 'x', permissions: [] })).rejects.toBeDefined();
      expect(invalidated()).toBe(1);
    });

    it('refuses to take administration from the tenant’s last administrator (409), writing nothing', async () => {
      const { service, store } = await setup();
      const error = await service
        .update(admin(), ADMIN, { name: 'admin', permissions: ['application:read'] })
        .catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.Conflict);
      expect(await store.app(ADMIN)).toEqual({ name: 'admin', permissions: permissionsFor('management') });
      expect(await audit()).toEqual([]);
      expect(await events()).toEqual([]);
    });

    it('lets it go when another administrator with a key remains, and not when that one has no key', async () => {
      const { service, store } = await setup();
      await store.seed({}, 0);
      expect(
        code(
          await service
            .update(admin(), ADMIN, { name: 'admin', permissions: ['application:read'] })
            .catch((e: unknown) => e),
        ),
      ).toBe(ApplicationsErrorCode.Conflict);
      await store.seed({});
      await service.update(admin(), ADMIN, { name: 'admin', permissions: ['application:read'] });
      expect((await store.app(ADMIN)).permissions).toEqual(['application:read']);
    });

    it('refuses to update an application holding management permissions the caller lacks', async () => {
      const { service, store } = await setup();
      const second = await store.seed({});
      const who = admin({ permissions: ['application:update'] });
      const error = await service.update(who, second.id, { name: 'x' }).catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.Forbidden);
      expect((await store.app(second.id)).name).toBe(SECOND_ADMIN_NAME);
    });

    it('never finds another tenant’s application', async () => {
      const { service, store } = await setup();
      const theirs = await store.seed({ tenantId: OTHER_TENANT, name: 'theirs' });
      const error = await service.update(admin(), theirs.id, { name: 'mine now' }).catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.NotFound);
      await expect(service.get(admin().actor, theirs.id)).rejects.toMatchObject({
        code: ApplicationsErrorCode.NotFound,
      });
      for (const call of [service.delete(admin(), theirs.id), service.createKey(admin(), theirs.id)])
        expect(code(await call.catch((e: unknown) => e))).toBe(ApplicationsErrorCode.NotFound);
      expect((await store.app(theirs.id)).name).toBe('theirs');
      expect(await store.keys(theirs.id)).toHaveLength(1);
      expect(await events()).toEqual([]);
    });
  });

  describe('delete', () => {
    it('deletes with its keys; the event shows the application as it stood, the audit row names it', async () => {
      const { service, store, invalidated } = await setup();
      const app = await store.seed({ type: 'private', permissions: [] }, 2);
      await service.delete(admin(), app.id);
      expect(await store.app(app.id)).toBeUndefined();
      expect(await store.keys(app.id)).toEqual([]);
      expect(await audit()).toEqual([
        {
          entity_type: 'application',
          entity_id: app.id,
          operation: 'delete',
          message: 'Application deleted',
        },
      ]);
      const [event] = await events();
      expect(event).toMatchObject({ type: 'application:deleted', entity_id: app.id });
      expect((event.data as { keys: unknown[] }).keys).toHaveLength(2);
      expect(invalidated()).toBe(1);
    });

    it('refuses to delete the last administrator', async () => {
      const { service, store } = await setup();
      const error = await service.delete(admin(), ADMIN).catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.Conflict);
      expect(await store.app(ADMIN)).toBeDefined();
      expect(await store.keys()).toHaveLength(1);
    });
  });

  describe('keys', () => {
    it('creates a key: answered once in clear, the event lists every key, the audit row names the key', async () => {
      const { service, store, invalidated } = await setup();
      const key = await service.createKey(admin(), ADMIN);
      expect(key.key).toMatch(/^key_/);
      expect(await store.keys()).toContain(key.id);
      expect(await audit()).toEqual([
        {
          entity_type: 'application',
          entity_id: ADMIN,
          operation: 'update',
          message: `Application key ${key.id} created`,
        },
      ]);
      const recorded = await events();
      expect((recorded[0].data as { keys: { id: string }[] }).keys.map((k) => k.id)).toContain(key.id);
      expect(JSON.stringify(recorded)).not.toContain(key.key);
      // A new key is cached by nobody yet: nothing to forget.
      expect(invalidated()).toBe(0);
    });

    it('revokes a key with its audit row; the event lists the keys left', async () => {
      const { service, store, invalidated } = await setup();
      const [first] = await store.keys();
      const second = await service.createKey(admin(), ADMIN);
      await service.deleteKey(admin(), ADMIN, first);
      expect(await store.keys()).toEqual([second.id]);
      expect((await audit())[1]).toEqual({
        entity_type: 'application',
        entity_id: ADMIN,
        operation: 'update',
        message: `Application key ${first} revoked`,
      });
      expect(((await events())[1].data as { keys: { id: string }[] }).keys.map((k) => k.id)).toEqual([
        second.id,
      ]);
      expect(invalidated()).toBe(1);
    });

    it('refuses to revoke the last key of the last administrator, and an unknown key', async () => {
      const { service, store } = await setup();
      const [only] = await store.keys();
      expect(code(await service.deleteKey(admin(), ADMIN, only).catch((e: unknown) => e))).toBe(
        ApplicationsErrorCode.Conflict,
      );
      expect(code(await service.deleteKey(admin(), ADMIN, randomUUID()).catch((e: unknown) => e))).toBe(
        ApplicationsErrorCode.NotFound,
      );
      expect(await store.keys()).toEqual([only]);
      expect(await audit()).toEqual([]);
    });
  });
});
