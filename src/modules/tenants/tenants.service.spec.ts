import { tenantsOn } from '../../../test/support/service-stacks';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../test/support/service-database';
import { hashApiKey } from '../../common/auth/api-key';
import { permissionsFor } from '../../common/auth/permissions';
import { TenantsErrorCode } from './tenants.errors';
import { TenantsService } from './tenants.service';
import { TenantsRepository } from './tenants.repository';
import { SYSTEM_TENANT_ID } from '../../common/audit/system-tenant';

/**
 * Tenants on the real SQL: a tenant is created with its management application and first key in one
 * change, attributed to that application; the first start creates one only on an empty database.
 */
let db: ServiceDatabase;
let applications: ReturnType<typeof tenantsOn>['applications'];
let service: TenantsService;

beforeAll(async () => {
  db = await openServiceDatabase();
  ({ tenants: service, applications } = tenantsOn(db));
});
afterAll(() => db.close());
afterEach(() => jest.restoreAllMocks());

const count = async (table: string) =>
  Number((await db.rows<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0].n);

describe('createFirstTenant', () => {
  it('creates the tenant once on an empty database, however many instances start together', async () => {
    expect(await count('tenants')).toBe(0);
    // A key ceremony before the first start makes the system tenant (its log): it is not a first tenant.
    await db.work.transaction({}, (change) =>
      new TenantsRepository(db.dataSource).ensureSystemTenant(change),
    );
    await db.work.transaction({}, (change) =>
      new TenantsRepository(db.dataSource).ensureSystemTenant(change),
    );
    expect(await db.rows('SELECT id, name, wrapped_key FROM tenants')).toEqual([
      { id: SYSTEM_TENANT_ID, name: 'system', wrapped_key: null },
    ]);
    // Each takes the bootstrap lock in its change and counts the tenants there: the later ones find one.
    const results = await Promise.all([1, 2, 3].map(() => service.createFirstTenant('default')));
    const created = results.filter((r) => r !== undefined);
    expect(created).toHaveLength(1);
    expect(await db.rows('SELECT id, name FROM tenants WHERE id <> $1', [SYSTEM_TENANT_ID])).toEqual([
      { id: created[0].tenant_id, name: 'default' },
    ]);
    expect(await count('applications')).toBe(1);
  });

  it('creates nothing once a tenant exists', async () => {
    const before = await Promise.all(['tenants', 'applications', 'api_keys', 'audit_logs'].map(count));
    expect(await service.createFirstTenant('default')).toBeUndefined();
    expect(await Promise.all(['tenants', 'applications', 'api_keys', 'audit_logs'].map(count))).toEqual(
      before,
    );
  });
});

describe('createTenant', () => {
  it('writes the tenant, its management application holding every management permission, and one key', async () => {
    const created = await service.createTenant('Shop');
    const [tenant] = await db.rows<{ name: string; key_version: string }>(
      'SELECT name, key_version FROM tenants WHERE id = $1',
      [created.tenant_id],
    );
    expect(tenant).toEqual({ name: 'Shop', key_version: 'v1' });
    const [app] = await db.rows<{ id: string; name: string; type: string; permissions: string[] }>(
      'SELECT id, name, type, permissions FROM applications WHERE tenant_id = $1',
      [created.tenant_id],
    );
    expect(app).toEqual({
      id: created.management_application_id,
      name: 'Shop management',
      type: 'management',
      permissions: expect.arrayContaining(permissionsFor('management')) as string[],
    });
    expect(app.permissions).toHaveLength(new Set(permissionsFor('management')).size);
    // The key is answered once, in clear; the database keeps its digest only.
    const keys = await db.rows<{ key_hash: Buffer }>('SELECT key_hash FROM api_keys WHERE tenant_id = $1', [
      created.tenant_id,
    ]);
    expect(keys).toHaveLength(1);
    expect(keys[0].key_hash.equals(hashApiKey(created.management_key))).toBe(true);
    expect(JSON.stringify(await db.rows('SELECT * FROM api_keys'))).not.toContain(created.management_key);
  });

  it('attributes the audit rows to the new management application, in the change', async () => {
    const created = await service.createTenant('Audited');
    const rows = await db.rows<Record<string, string>>(
      `SELECT actor_id, actor_type, entity_type, entity_id, operation, message
         FROM audit_logs WHERE tenant_id = $1 ORDER BY pos`,
      [created.tenant_id],
    );
    expect(rows).toEqual([
      {
        actor_id: created.management_application_id,
        actor_type: 'application',
        entity_type: 'tenant',
        entity_id: created.tenant_id,
        operation: 'create',
        message: 'Tenant created',
      },
      {
        actor_id: created.management_application_id,
        actor_type: 'application',
        entity_type: 'application',
        entity_id: created.management_application_id,
        operation: 'create',
        message: 'Management application created with the tenant',
      },
    ]);
    expect(JSON.stringify(rows)).not.toContain(created.management_key);
  });

  it('leaves nothing behind when the change fails after the tenant row', async () => {
    const before = await Promise.all(['tenants', 'applications', 'api_keys', 'audit_logs'].map(count));
    jest.spyOn(applications, 'insertKey').mockRejectedValueOnce(new Error('the key insert failed'));
    await expect(service.createTenant('Half')).rejects.toThrow('the key insert failed');
    expect(await Promise.all(['tenants', 'applications', 'api_keys', 'audit_logs'].map(count))).toEqual(
      before,
    );
    expect(await db.rows("SELECT id FROM tenants WHERE name = 'Half'")).toEqual([]);
  });
});

describe('getSelf', () => {
  it("answers the caller's tenant, and only it", async () => {
    const mine = await service.createTenant('Mine');
    const theirs = await service.createTenant('Theirs');
    const tenant = await service.getSelf(principalOf(mine.tenant_id));
    expect(tenant).toEqual({ id: mine.tenant_id, name: 'Mine', created_at: expect.any(String) as string });
    expect((await service.getSelf(principalOf(theirs.tenant_id))).name).toBe('Theirs');
  });

  it('is not_found for a principal whose tenant is gone', async () => {
    await expect(service.getSelf(principalOf('00000000-0000-4000-8000-00000000dead'))).rejects.toMatchObject({
      code: TenantsErrorCode.NotFound,
    });
  });
});
