import { randomUUID } from 'node:crypto';
import type { Principal } from '../../common/auth/principal';
import { ValidationException } from '../../common/errors/domain.exception';
import type { OutboundHttp } from '../../common/outbound/outbound-http.service';
import { OutboundError } from '../../common/outbound/outbound.types';
import type { Change } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { FakeUnitOfWork } from '../../../test/support/fake-unit-of-work';
import type { CreateProxyDto, PatchProxyDto } from './dto/proxy.dto';
import type { ProxyEntity } from './entities/proxy.entity';
import { ProxiesException } from './proxies.errors';
import type { ProxiesRepository, ProxyChanges, ProxyFilter } from './proxies.repository';
import { PROXY_KEY_FORMAT, ProxiesService } from './proxies.service';

const TENANT = '00000000-0000-4000-8000-000000000001';
const OTHER_TENANT = '00000000-0000-4000-8000-000000000002';
const APP = '00000000-0000-4000-8000-00000000000a';

/** The proxies table as the service sees it; every write and locked read notes its change. */
class FakeProxies {
  readonly rows: ProxyEntity[] = [];
  readonly calls: { op: string; change: Change }[] = [];

  private find(tenantId: string, id: string): ProxyEntity | undefined {
    return this.rows.find((p) => p.tenantId === tenantId && p.id === id);
  }

  insert(change: Change, proxy: ProxyEntity): Promise<void> {
    this.calls.push({ op: 'insert', change });
    this.rows.push({ ...proxy });
    return Promise.resolve();
  }

  findOne(tenantId: string, id: string): Promise<ProxyEntity | null> {
    const found = this.find(tenantId, id);
    return Promise.resolve(found ? { ...found } : null);
  }

  findLocked(change: Change, tenantId: string, id: string): Promise<ProxyEntity | null> {
    this.calls.push({ op: 'lock', change });
    return this.findOne(tenantId, id);
  }

  page(filter: ProxyFilter, skip: number, take: number): Promise<{ total: number; rows: ProxyEntity[] }> {
    const all = this.rows.filter(
      (p) =>
        p.tenantId === filter.tenantId &&
        (!filter.ids || filter.ids.includes(p.id)) &&
        (!filter.name || p.name.toLowerCase().includes(filter.name.toLowerCase())),
    );
    return Promise.resolve({ total: all.length, rows: all.slice(skip, skip + take) });
  }

  update(change: Change, tenantId: string, id: string, changes: ProxyChanges): Promise<void> {
    this.calls.push({ op: 'update', change });
    const row = this.find(tenantId, id);
    if (row) Object.assign(row, changes);
    return Promise.resolve();
  }

  delete(change: Change, tenantId: string, id: string): Promise<boolean> {
    this.calls.push({ op: 'delete', change });
    const at = this.rows.findIndex((p) => p.tenantId === tenantId && p.id === id);
    if (at === -1) return Promise.resolve(false);
    this.rows.splice(at, 1);
    return Promise.resolve(true);
  }

  asRepository(): ProxiesRepository {
    return this as unknown as ProxiesRepository;
  }
}

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

describe('ProxiesService', () => {
  let repo: FakeProxies;
  let work: FakeUnitOfWork;
  let checked: string[];
  let service: ProxiesService;

  beforeEach(() => {
    repo = new FakeProxies();
    work = new FakeUnitOfWork();
    checked = [];
    const outbound = {
      checkDestination: (url: string) => {
        checked.push(url);
        if (url.includes('internal')) throw new OutboundError('destination_not_allowed', 'a private address');
        return Promise.resolve(new URL(url));
      },
    } as unknown as OutboundHttp;
    service = new ProxiesService(repo.asRepository(), outbound, work.asUnitOfWork());
  });

  describe('create', () => {
    it('writes the proxy in one change with its audit row', async () => {
      const proxy = await service.create(origin(), body());
      expect(work.committed).toHaveLength(1);
      expect(repo.calls).toEqual([{ op: 'insert', change: work.committed[0] }]);
      expect(work.audit).toEqual([
        { entityType: 'proxy', entityId: proxy.id, operation: 'create', message: 'Proxy created' },
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
      expect(work.committed).toHaveLength(0);
      expect(work.rolledBack).toHaveLength(0);
      expect(repo.rows).toHaveLength(0);
    });

    it('a destination with a query string or fragment is refused', async () => {
      for (const url of ['https://api.processor.example/v1?a=1', 'https://api.processor.example/v1#x'])
        await expect(service.create(origin(), body({ destination_url: url }))).rejects.toThrow(
          ValidationException,
        );
      expect(repo.rows).toHaveLength(0);
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
      expect(work.committed).toHaveLength(2);
      expect(repo.calls.slice(1)).toEqual([
        { op: 'lock', change: work.committed[1] },
        { op: 'update', change: work.committed[1] },
      ]);
      expect(work.audit[1]).toEqual({
        entityType: 'proxy',
        entityId: id,
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
      expect(work.rolledBack).toHaveLength(1);
      expect(work.audit).toHaveLength(1);
      expect(repo.rows[0].destinationUrl).toBe('https://api.processor.example/v1');
    });

    it("another tenant's proxy is not found", async () => {
      const { id } = await service.create(origin(), body());
      await expect(service.update(origin(OTHER_TENANT), id, { name: 'x' }, false)).rejects.toThrow(
        ProxiesException,
      );
      expect(repo.rows[0].name).toBe('Processor');
    });
  });

  describe('delete', () => {
    it('deletes in one change with its audit row', async () => {
      const { id } = await service.create(origin(), body());
      await service.delete(origin(), id);
      expect(repo.rows).toHaveLength(0);
      expect(work.audit[1]).toEqual({
        entityType: 'proxy',
        entityId: id,
        operation: 'delete',
        message: 'Proxy deleted',
      });
    });

    it("an unknown proxy, or another tenant's, is a 404 that records nothing", async () => {
      const { id } = await service.create(origin(), body());
      await expect(service.delete(origin(OTHER_TENANT), id)).rejects.toMatchObject({ code: 'not_found' });
      await expect(service.delete(origin(), randomUUID())).rejects.toMatchObject({ code: 'not_found' });
      expect(work.rolledBack).toHaveLength(2);
      expect(work.audit).toHaveLength(1);
      expect(repo.rows).toHaveLength(1);
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
      expect(work.committed).toHaveLength(2);
    });
  });
});
