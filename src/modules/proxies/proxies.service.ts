import { Injectable } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { BASE62 } from '../../common/auth/api-key';
import type { AuditEntry } from '../../common/audit/audit.types';
import type { Principal } from '../../common/auth/principal';
import { ValidationException } from '../../common/errors/domain.exception';
import { OutboundHttp } from '../../common/outbound/outbound-http.service';
import { OutboundError } from '../../common/outbound/outbound.types';
import { offsetOf, offsetPage } from '../../common/pagination/offset-pagination';
import type { Change } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import type { CreateProxyDto, PatchProxyDto, ProxyDto, ProxyPageDto } from './dto/proxy.dto';
import type { ListProxiesQueryDto } from './dto/list-proxies-query.dto';
import { ProxyEntity } from './entities/proxy.entity';
import { ProxiesException } from './proxies.errors';
import { ProxiesRepository } from './proxies.repository';

/** `key_prx_<32 random bytes in base62>`: names a proxy in `BT-PROXY-KEY`. */
export const generateProxyKey = (): string => `key_prx_${BASE62.encode(randomBytes(32))}`;

export const PROXY_KEY_FORMAT = /^key_prx_[0-9A-Za-z]{40,50}$/;

export function proxyDto(proxy: ProxyEntity): ProxyDto {
  return {
    id: proxy.id,
    key: proxy.key,
    tenant_id: proxy.tenantId,
    name: proxy.name,
    destination_url: proxy.destinationUrl,
    require_auth: proxy.requireAuth,
    created_by: proxy.createdBy,
    created_at: proxy.createdAt.toISOString(),
    modified_by: proxy.modifiedBy,
    modified_at: proxy.modifiedAt?.toISOString() ?? null,
  };
}

/** The audit row of a write to a proxy. */
const entry = (id: string, operation: 'create' | 'update' | 'delete', message: string): AuditEntry => ({
  entityType: 'proxy',
  entityId: id,
  operation,
  message,
});

/**
 * Pre-configured proxies, always within the caller's tenant. Each write is one change, which carries
 * its audit row.
 */
@Injectable()
export class ProxiesService {
  constructor(
    private readonly proxies: ProxiesRepository,
    private readonly outbound: OutboundHttp,
    private readonly work: UnitOfWork,
  ) {}

  /** The destination (which may take a DNS lookup) is checked before the change opens. */
  async create(origin: RequestOrigin, dto: CreateProxyDto): Promise<ProxyDto> {
    const who = origin.actor;
    const destination = await this.checkedDestination(dto.destination_url);
    const proxy: ProxyEntity = {
      tenantId: who.tenantId,
      id: randomUUID(),
      key: generateProxyKey(),
      name: dto.name,
      destinationUrl: destination,
      requireAuth: dto.require_auth ?? true,
      createdBy: who.applicationId,
      createdAt: new Date(),
      modifiedBy: null,
      modifiedAt: null,
    };
    return this.work.transaction(origin, async (change) => {
      await this.proxies.insert(change, proxy);
      change.audit(entry(proxy.id, 'create', 'Proxy created'));
      return proxyDto(proxy);
    });
  }

  async list(who: Principal, query: ListProxiesQueryDto): Promise<ProxyPageDto> {
    const { skip, take } = offsetOf(query);
    const { total, rows } = await this.proxies.page(
      { tenantId: who.tenantId, ids: query.id, name: query.name },
      skip,
      take,
    );
    return offsetPage(rows.map(proxyDto), total, query);
  }

  async get(who: Principal, id: string): Promise<ProxyDto> {
    return proxyDto(await this.findOwned(who, id));
  }

  /**
   * PUT replaces name, destination and `require_auth` (omitted: true); PATCH changes what it names. The
   * proxy is found (404) before its new destination is checked (400).
   */
  async update(origin: RequestOrigin, id: string, dto: PatchProxyDto, replace: boolean): Promise<ProxyDto> {
    const who = origin.actor;
    return this.work.transaction(origin, async (change) => {
      const proxy = await this.findLocked(change, who, id);
      const changes = {
        name: dto.name ?? proxy.name,
        destinationUrl:
          dto.destination_url !== undefined
            ? await this.checkedDestination(dto.destination_url)
            : proxy.destinationUrl,
        requireAuth: dto.require_auth ?? (replace ? true : proxy.requireAuth),
        modifiedBy: who.applicationId,
        modifiedAt: new Date(),
      };
      await this.proxies.update(change, who.tenantId, id, changes);
      change.audit(entry(id, 'update', 'Proxy updated'));
      return proxyDto({ ...proxy, ...changes });
    });
  }

  async delete(origin: RequestOrigin, id: string): Promise<void> {
    const who = origin.actor;
    return this.work.transaction(origin, async (change) => {
      if (!(await this.proxies.delete(change, who.tenantId, id))) throw ProxiesException.notFound();
      change.audit(entry(id, 'delete', 'Proxy deleted'));
    });
  }

  private async findOwned(who: Principal, id: string): Promise<ProxyEntity> {
    const proxy = await this.proxies.findOne(who.tenantId, id);
    if (!proxy) throw ProxiesException.notFound();
    return proxy;
  }

  /** The caller's proxy, its row locked for the rest of the change. */
  private async findLocked(change: Change, who: Principal, id: string): Promise<ProxyEntity> {
    const proxy = await this.proxies.findLocked(change, who.tenantId, id);
    if (!proxy) throw ProxiesException.notFound();
    return proxy;
  }

  /** The destination as it will be used, or a 400 naming `destination_url`. */
  private async checkedDestination(url: string): Promise<string> {
    try {
      const checked = await this.outbound.checkDestination(url);
      if (checked.search || checked.hash)
        throw ValidationException.field(
          'destination_url',
          'must not carry a query string or fragment (requests bring their own)',
        );
      return checked.toString().replace(/\/+$/, '');
    } catch (error) {
      if (error instanceof OutboundError) throw ValidationException.field('destination_url', error.message);
      throw error;
    }
  }
}
