import { randomUUID } from 'node:crypto';
import type { Principal } from '../../common/auth/principal';
import { ValidationException } from '../../common/errors/domain.exception';
import type { OutboundHttp } from '../../common/outbound/outbound-http.service';
import { OutboundError } from '../../common/outbound/outbound.types';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { openServiceDatabase, type ServiceDatabase } from '../../../test/support/service-database';
import type { CreateProxyDto, PatchProxyDto } from './dto/proxy.dto';
import { ProxiesException } from './proxies.errors';
import { ProxiesRepository } from './proxies.repository';
import { PROXY_KEY_FORMAT, ProxiesService } from './proxies.service';

const APP = '00000000-0000-4000-8000-00000000000a';

let db: ServiceDatabase;
/** Each test's tenants, new for it. */
let TENANT: string;
let OTHER_TENANT: string;

beforeAll(async () => {
  db = await openServiceDatabase();
});
afterAll(() => db.close());
beforeEach(async () => {
  TENANT = await db.newTenant('proxies');
  OTHER_TENANT = await db.newTenant('other');
});

/** The tenant's proxies as the database holds them. */
const rows = () =>
  db.rows<{ name: string; destination_url: string }>(
    'SELECT name, destination_url FROM proxies WHERE tenant_id = $1 ORDER BY created_at',
    [TENANT],
  );

/** The tenant's audit rows, oldest first. */
const audit = () =>
  db.rows<{ entity_type: string; entity_id: string; operation: string; message: string }>(
    `SELECT entity_type, entity_id, operation, message FROM audit_logs WHERE tenant_id = $1
      ORDER BY created_at, ctid`,
    [TENANT],
  );

const principal = (tenantId = TENANT): Principal => ({
  tenantId,
  applicationId: APP,
  applicationType: 'management',
  keyKind: 'management',
  keyId: randomUUID(),
  authorized: true,
  permissions: ['proxy:create', 'proxy:read', 'proxy:update', 'proxy:delete'],
  rules: [],
});

const origin = (tenantId = TENANT): RequestOrigin => ({ actor: principal(tenantId) });

const body = (overrides: Partial<CreateProxyDto> = {}): CreateProxyDto => ({
  name: 'Processor',
  destination_url: 'https://api.processor.example/v1/',
  ...overrides,
});

describe('ProxiesService (real repository on PGlite)', () => {
  let checked: string[];
  let service: ProxiesService;

  beforeEach(() => {
    checked = [];
    const outbound = {
      checkDestination: (url: string) => {
        checked.push(url);
        if (url.includes('internal')) throw new OutboundError('destination_not_allowed', 'a private address');
        return Promise.resolve(new URL(url));
      },
    } as unknown as OutboundHttp;
    service = new ProxiesService(new ProxiesRepository(db.dataSource), outbound, db.work);
  });

  describe('create', () => {
    it('writes the proxy in one change with its audit row', async () => {
      const proxy = await service.create(origin(), body());
      expect(await rows()).toEqual([
        { name: 'Processor', destination_url: 'https://api.processor.example/v1' },
      ]);
      expect(await audit()).toEqual([
        { entity_type: 'proxy', entity_id: proxy.id, operation: 'create', message: 'Proxy created' },
      ]);
      expect(proxy).toMatchObject({
        tenant_id: TENANT,
        name: 'Processor',
        created_by: APP,
        modified_by: null,
      });
    });

    it('answers a fresh proxy key, and the destination without its trailing slash', async () => {
      const a = await service.create(origin(), body());
      const b = await service.create(origin(), body());
      expect(a.key).toMatch(PROXY_KEY_FORMAT);
      expect(a.key).not.toBe(b.key);
      expect(a.destination_url).toBe('https://api.processor.example/v1');
    });

    it('require_auth defaults to true', async () => {
      expect((await service.create(origin(), body())).require_auth).toBe(true);
      expect((await service.create(origin(), body({ require_auth: false }))).require_auth).toBe(false);
    });

    it('a refused destination is a 400 naming destination_url, and no change opens', async () => {
      await expect(
        service.create(origin(), body({ destination_url: 'http://internal.example/' })),
      ).rejects.toMatchObject({ errors: { destination_url: ['a private address'] } });
      expect(await audit()).toEqual([]);
      expect(await rows()).toHaveLength(0);
    });

    it('a destination with a query string or fragment is refused', async () => {
      for (const url of ['https://api.processor.example/v1?a=1', 'https://api.processor.example/v1#x'])
        await expect(service.create(origin(), body({ destination_url: url }))).rejects.toThrow(
          ValidationException,
        );
      expect(await rows()).toHaveLength(0);
    });
  });

  describe('update', () => {
    it('PUT replaces the fields (require_auth omitted: true), one change with its audit row', async () => {
      const { id } = await service.create(origin(), body({ require_auth: false }));
      const updated = await service.update(
        origin(),
        id,
        { name: 'Renamed', destination_url: 'https://other.example' },
        true,
      );
      expect(updated).toMatchObject({
        name: 'Renamed',
        destination_url: 'https://other.example',
        require_auth: true,
        modified_by: APP,
      });
      expect(await rows()).toEqual([{ name: 'Renamed', destination_url: 'https://other.example' }]);
      expect((await audit())[1]).toEqual({
        entity_type: 'proxy',
        entity_id: id,
        operation: 'update',
        message: 'Proxy updated',
      });
    });

    it('PATCH changes only what it names, and checks no destination it was not given', async () => {
      const { id } = await service.create(origin(), body({ require_auth: false }));
      checked = [];
      const patch: PatchProxyDto = { name: 'Renamed' };
      const updated = await service.update(origin(), id, patch, false);
      expect(updated).toMatchObject({
        name: 'Renamed',
        destination_url: 'https://api.processor.example/v1',
        require_auth: false,
      });
      expect(checked).toEqual([]);
    });

    it('an unknown proxy is a 404 before its destination is checked', async () => {
      await expect(
        service.update(origin(), randomUUID(), { destination_url: 'http://internal.example/' }, false),
      ).rejects.toMatchObject({ code: 'not_found' });
      expect(checked).toEqual([]);
    });

    it('a refused destination rolls the change back: no audit row, the proxy unchanged', async () => {
      const { id } = await service.create(origin(), body());
      await expect(
        service.update(origin(), id, { destination_url: 'http://internal.example/' }, false),
      ).rejects.toThrow(ValidationException);
      expect(await audit()).toHaveLength(1);
      expect((await rows())[0].destination_url).toBe('https://api.processor.example/v1');
    });

    it("another tenant's proxy is not found", async () => {
      const { id } = await service.create(origin(), body());
      await expect(service.update(origin(OTHER_TENANT), id, { name: 'x' }, false)).rejects.toThrow(
        ProxiesException,
      );
      expect((await rows())[0].name).toBe('Processor');
    });
  });

  describe('delete', () => {
    it('deletes in one change with its audit row', async () => {
      const { id } = await service.create(origin(), body());
      await service.delete(origin(), id);
      expect(await rows()).toHaveLength(0);
      expect((await audit())[1]).toEqual({
        entity_type: 'proxy',
        entity_id: id,
        operation: 'delete',
        message: 'Proxy deleted',
      });
    });

    it("an unknown proxy, or another tenant's, is a 404 that records nothing", async () => {
      const { id } = await service.create(origin(), body());
      await expect(service.delete(origin(OTHER_TENANT), id)).rejects.toMatchObject({ code: 'not_found' });
      await expect(service.delete(origin(), randomUUID())).rejects.toMatchObject({ code: 'not_found' });
      expect(await audit()).toHaveLength(1);
      expect(await rows()).toHaveLength(1);
    });
  });

  describe('reads', () => {
    it('get and list see the caller tenant only, and open no change', async () => {
      const mine = await service.create(origin(), body());
      await service.create(origin(OTHER_TENANT), body());
      expect((await service.get(principal(), mine.id)).id).toBe(mine.id);
      await expect(service.get(principal(OTHER_TENANT), mine.id)).rejects.toMatchObject({
        code: 'not_found',
      });
      const page = await service.list(principal(), { page: 1, size: 20 });
      expect(page.data.map((p) => p.id)).toEqual([mine.id]);
      expect(await audit()).toHaveLength(1);
    });
  });
});
