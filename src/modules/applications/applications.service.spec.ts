import { FakeUnitOfWork } from '../../../test/support/fake-unit-of-work';
import { permissionsFor } from '../../common/auth/permissions';
import type { Principal } from '../../common/auth/principal';
import { ValidationException } from '../../common/errors/domain.exception';
import type { Change } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import type { ApplicationKeyResolver } from './application-key.resolver';
import { ApplicationsErrorCode, ApplicationsException } from './applications.errors';
import type { ApplicationChanges, ApplicationsRepository, KeySummary } from './applications.repository';
import { ApplicationsService } from './applications.service';
import type { ApiKeyEntity } from './entities/api-key.entity';
import type { ApplicationEntity } from './entities/application.entity';

const TENANT = '00000000-0000-4000-8000-0000000000a1';
const OTHER_TENANT = '00000000-0000-4000-8000-0000000000b1';
const ADMIN = '00000000-0000-4000-8000-000000000001';
const SECOND_ADMIN = '00000000-0000-4000-8000-000000000002';

/** `applications` and `api_keys` in memory; every call names what it did, in order. */
class FakeApplications {
  readonly apps = new Map<string, ApplicationEntity>();
  keys: ApiKeyEntity[] = [];
  readonly calls: string[] = [];

  seed(app: Partial<ApplicationEntity> & { id: string }, keys = 1): ApplicationEntity {
    const full: ApplicationEntity = {
      tenantId: TENANT,
      name: app.id,
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
    this.apps.set(full.id, full);
    for (let i = 0; i < keys; i++)
      this.keys.push({
        tenantId: full.tenantId,
        id: `${full.id.slice(0, -4)}${String(1000 + this.keys.length)}`,
        applicationId: full.id,
        keyHash: Buffer.alloc(32, i),
        createdBy: null,
        createdAt: new Date('2026-01-01T00:00:00Z'),
      });
    return full;
  }

  private owned(tenantId: string, id: string): ApplicationEntity | null {
    const app = this.apps.get(id);
    return app && app.tenantId === tenantId ? { ...app } : null;
  }

  private keysOfApps(tenantId: string, ids: string[]): ApiKeyEntity[] {
    return this.keys.filter((k) => k.tenantId === tenantId && ids.includes(k.applicationId));
  }

  readonly repository = {
    insert: async (_change: Change, app: ApplicationEntity) => {
      this.calls.push('insert');
      this.apps.set(app.id, { ...app });
    },
    findOne: async (tenantId: string, id: string) => this.owned(tenantId, id),
    lockOne: async (_change: Change, tenantId: string, id: string) => {
      this.calls.push(`lock application ${id}`);
      return this.owned(tenantId, id);
    },
    lockTenant: async (_change: Change, tenantId: string) => void this.calls.push(`lock tenant ${tenantId}`),
    update: async (_change: Change, tenantId: string, id: string, changes: ApplicationChanges) => {
      this.calls.push('update');
      const app = this.owned(tenantId, id);
      if (app) this.apps.set(id, { ...app, ...changes });
    },
    delete: async (_change: Change, tenantId: string, id: string): Promise<KeySummary[]> => {
      this.calls.push('delete');
      const keys = this.keysOfApps(tenantId, [id]);
      this.apps.delete(id);
      this.keys = this.keys.filter((k) => !keys.includes(k));
      return keys;
    },
    countOthersHoldingWithKey: async (
      _change: Change,
      tenantId: string,
      exceptId: string,
      permissions: string[],
    ) =>
      [...this.apps.values()].filter(
        (a) =>
          a.tenantId === tenantId &&
          a.id !== exceptId &&
          permissions.every((p) => a.permissions.includes(p)) &&
          this.keys.some((k) => k.applicationId === a.id),
      ).length,
    insertKey: async (_change: Change, key: ApiKeyEntity) => {
      this.calls.push('insert key');
      this.keys.push(key);
    },
    insertKeyListingKeys: async (_change: Change, key: ApiKeyEntity) => {
      this.calls.push('insert key');
      this.keys.push(key);
      return this.keysOfApps(key.tenantId, [key.applicationId]);
    },
    keysOf: async (tenantId: string, ids: string[]) => this.keysOfApps(tenantId, ids),
    keysIn: async (_change: Change, tenantId: string, ids: string[]) => this.keysOfApps(tenantId, ids),
    findKey: async (tenantId: string, applicationId: string, id: string) =>
      this.keysOfApps(tenantId, [applicationId]).find((k) => k.id === id) ?? null,
    deleteKey: async (_change: Change, tenantId: string, applicationId: string, id: string) => {
      this.calls.push('delete key');
      this.keys = this.keys.filter(
        (k) => !(k.tenantId === tenantId && k.applicationId === applicationId && k.id === id),
      );
    },
    page: async () => ({ total: 0, rows: [] }),
  } as unknown as ApplicationsRepository;
}

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

function setup() {
  const store = new FakeApplications();
  store.seed({ id: ADMIN });
  const work = new FakeUnitOfWork();
  let invalidated = 0;
  const resolver = { invalidate: () => void invalidated++ } as unknown as ApplicationKeyResolver;
  const service = new ApplicationsService(work.asUnitOfWork(), store.repository, resolver);
  return { store, work, service, invalidated: () => invalidated };
}

const code = (error: unknown) => (error as ApplicationsException).code;

describe('ApplicationsService', () => {
  describe('create', () => {
    it('writes the application and its first key in one change, with its audit row and event', async () => {
      const { service, store, work } = setup();
      const created = await service.create(admin(), {
        name: 'shop',
        type: 'private',
        permissions: ['token:create'],
      });
      expect(created.key).toMatch(/^key_/);
      expect(store.calls).toEqual(['insert', 'insert key']);
      expect(work.committed).toHaveLength(1);
      expect(work.audit).toEqual([
        {
          entityType: 'application',
          entityId: created.id,
          operation: 'create',
          message: 'Application created',
        },
      ]);
      expect(work.events).toEqual([
        expect.objectContaining({ tenantId: TENANT, type: 'application:created', entityId: created.id }),
      ]);
      // The event lists the key, never in clear.
      const data = work.events[0].data as { key?: string; keys: { id: string; key?: string }[] };
      expect(data.key).toBeUndefined();
      expect(data.keys).toEqual([expect.not.objectContaining({ key: expect.anything() })]);
    });

    it('creates no key when told not to', async () => {
      const { service, store, work } = setup();
      const created = await service.create(admin(), {
        name: 'shop',
        type: 'public',
        permissions: ['token:create'],
        create_key: false,
      });
      expect(created.key).toBeUndefined();
      expect(store.calls).toEqual(['insert']);
      expect((work.events[0].data as { keys: unknown[] }).keys).toEqual([]);
    });

    it('refuses a permission the application type may not hold, before any change opens', async () => {
      const { service, work } = setup();
      await expect(
        service.create(admin(), { name: 'shop', type: 'public', permissions: ['application:create'] }),
      ).rejects.toBeInstanceOf(ValidationException);
      expect(work.committed).toHaveLength(0);
      expect(work.rolledBack).toHaveLength(0);
    });

    it('refuses to grant a management permission the caller does not hold itself', async () => {
      const { service, store } = setup();
      const who = admin({ permissions: ['application:create'] });
      const error = await service
        .create(who, { name: 'ops', type: 'management', permissions: ['application:delete'] })
        .catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.Forbidden);
      expect(store.calls).toEqual([]);
    });

    it('createApplication joins the caller’s change and leaves the audit row to it', async () => {
      const { service, work } = setup();
      await work.transaction({}, (change) =>
        service.createApplication(change, {
          id: SECOND_ADMIN,
          tenantId: TENANT,
          name: 'default management',
          type: 'management',
          permissions: permissionsFor('management'),
          rules: [],
          createdBy: null,
          createKey: true,
        }),
      );
      expect(work.audit).toEqual([]);
      expect(work.events).toEqual([
        expect.objectContaining({ type: 'application:created', entityId: SECOND_ADMIN }),
      ]);
    });
  });

  describe('update', () => {
    it('locks the tenant, then the application; writes it with its audit row and event', async () => {
      const { service, store, work } = setup();
      store.seed({ id: SECOND_ADMIN });
      const app = store.seed({
        id: '00000000-0000-4000-8000-000000000003',
        type: 'private',
        permissions: [],
      });
      const updated = await service.update(admin(), app.id, { name: 'renamed', permissions: ['token:read'] });
      expect(store.calls).toEqual([`lock tenant ${TENANT}`, `lock application ${app.id}`, 'update']);
      expect(updated).toMatchObject({ name: 'renamed', permissions: ['token:read'], modified_by: ADMIN });
      expect(work.audit).toEqual([
        { entityType: 'application', entityId: app.id, operation: 'update', message: 'Application updated' },
      ]);
      expect(work.events).toEqual([
        expect.objectContaining({ type: 'application:updated', entityId: app.id, data: updated }),
      ]);
    });

    it('empties the key cache once the change has committed, and not when it rolled back', async () => {
      const { service, store, invalidated } = setup();
      const app = store.seed({
        id: '00000000-0000-4000-8000-000000000003',
        type: 'private',
        permissions: [],
      });
      await service.update(admin(), app.id, { name: 'renamed' });
      expect(invalidated()).toBe(1);
      await expect(service.update(admin(), ADMIN, { name: 'x', permissions: [] })).rejects.toBeDefined();
      expect(invalidated()).toBe(1);
    });

    it('refuses to take administration from the tenant’s last administrator (409), writing nothing', async () => {
      const { service, store, work } = setup();
      const error = await service
        .update(admin(), ADMIN, { name: 'admin', permissions: ['application:read'] })
        .catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.Conflict);
      expect(store.calls).not.toContain('update');
      expect(work.rolledBack).toHaveLength(1);
      expect(work.audit).toEqual([]);
      expect(work.events).toEqual([]);
    });

    it('lets it go when another administrator with a key remains', async () => {
      const { service, store } = setup();
      store.seed({ id: SECOND_ADMIN });
      await service.update(admin(), ADMIN, { name: 'admin', permissions: ['application:read'] });
      expect(store.apps.get(ADMIN)!.permissions).toEqual(['application:read']);
    });

    it('refuses to update an application holding management permissions the caller lacks', async () => {
      const { service, store } = setup();
      store.seed({ id: SECOND_ADMIN });
      const who = admin({ permissions: ['application:update'] });
      const error = await service.update(who, SECOND_ADMIN, { name: 'x' }).catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.Forbidden);
    });

    it('never finds another tenant’s application', async () => {
      const { service, store, work } = setup();
      const theirs = store.seed({ id: '00000000-0000-4000-8000-000000000009', tenantId: OTHER_TENANT });
      const error = await service.update(admin(), theirs.id, { name: 'mine now' }).catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.NotFound);
      await expect(service.get(admin().actor, theirs.id)).rejects.toMatchObject({
        code: ApplicationsErrorCode.NotFound,
      });
      expect(store.apps.get(theirs.id)!.name).toBe(theirs.name);
      expect(work.events).toEqual([]);
    });
  });

  describe('delete', () => {
    it('deletes with its keys; the event shows the application as it stood, the audit row names it', async () => {
      const { service, store, work, invalidated } = setup();
      const app = store.seed(
        { id: '00000000-0000-4000-8000-000000000003', type: 'private', permissions: [] },
        2,
      );
      await service.delete(admin(), app.id);
      expect(store.apps.has(app.id)).toBe(false);
      expect(work.audit).toEqual([
        { entityType: 'application', entityId: app.id, operation: 'delete', message: 'Application deleted' },
      ]);
      expect(work.events).toEqual([
        expect.objectContaining({ type: 'application:deleted', entityId: app.id }),
      ]);
      expect((work.events[0].data as { keys: unknown[] }).keys).toHaveLength(2);
      expect(invalidated()).toBe(1);
    });

    it('refuses to delete the last administrator', async () => {
      const { service, store } = setup();
      const error = await service.delete(admin(), ADMIN).catch((e: unknown) => e);
      expect(code(error)).toBe(ApplicationsErrorCode.Conflict);
      expect(store.apps.has(ADMIN)).toBe(true);
    });
  });

  describe('keys', () => {
    it('creates a key: answered once in clear, the event lists every key, the audit row names the key', async () => {
      const { service, store, work, invalidated } = setup();
      const key = await service.createKey(admin(), ADMIN);
      expect(key.key).toMatch(/^key_/);
      expect(store.calls).toEqual([`lock application ${ADMIN}`, 'insert key']);
      expect(work.audit).toEqual([
        {
          entityType: 'application',
          entityId: ADMIN,
          operation: 'update',
          message: `Application key ${key.id} created`,
        },
      ]);
      const data = work.events[0].data as { keys: { id: string }[] };
      expect(data.keys.map((k) => k.id)).toContain(key.id);
      expect(JSON.stringify(work.events)).not.toContain(key.key);
      // A new key is cached by nobody yet: nothing to forget.
      expect(invalidated()).toBe(0);
    });

    it('revokes a key with its audit row; the event lists the keys left', async () => {
      const { service, store, work, invalidated } = setup();
      const [first] = store.keys;
      const second = await service.createKey(admin(), ADMIN);
      await service.deleteKey(admin(), ADMIN, first.id);
      expect(store.keys.map((k) => k.id)).toEqual([second.id]);
      expect(work.audit[1]).toEqual({
        entityType: 'application',
        entityId: ADMIN,
        operation: 'update',
        message: `Application key ${first.id} revoked`,
      });
      expect((work.events[1].data as { keys: { id: string }[] }).keys.map((k) => k.id)).toEqual([second.id]);
      expect(invalidated()).toBe(1);
    });

    it('refuses to revoke the last key of the last administrator, and an unknown key', async () => {
      const { service, store, work } = setup();
      const [only] = store.keys;
      expect(code(await service.deleteKey(admin(), ADMIN, only.id).catch((e: unknown) => e))).toBe(
        ApplicationsErrorCode.Conflict,
      );
      expect(
        code(
          await service
            .deleteKey(admin(), ADMIN, '00000000-0000-4000-8000-00000000ffff')
            .catch((e: unknown) => e),
        ),
      ).toBe(ApplicationsErrorCode.NotFound);
      expect(store.keys).toHaveLength(1);
      expect(work.rolledBack).toHaveLength(2);
    });

    it('opens the change with the request’s origin (its actor and its idempotency claim)', async () => {
      const { service, store, work } = setup();
      const app = store.seed({
        id: '00000000-0000-4000-8000-000000000003',
        type: 'private',
        permissions: [],
      });
      const origin: RequestOrigin = {
        ...admin(),
        idempotency: { record: jest.fn(), pin: jest.fn(), withhold: jest.fn() },
      };
      await service.update(origin, app.id, { name: 'renamed' });
      expect(work.committed[0].origin).toBe(origin);
    });
  });
});
