import { Injectable } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { BASE62 } from '../../common/auth/api-key';
import type { Principal } from '../../common/auth/principal';
import { Transactional } from '../../common/context/transactional';
import { ValidationException } from '../../common/errors/domain.exception';
import { OutboundHttp } from '../../common/outbound/outbound-http.service';
import { OutboundError } from '../../common/outbound/outbound.types';
import { offsetOf, offsetPage } from '../../common/pagination/offset-pagination';
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

/** Pre-configured proxies, always within the caller's tenant. */
@Injectable()
export class ProxiesService {
  constructor(
    private readonly proxies: ProxiesRepository,
    private readonly outbound: OutboundHttp,
  ) {}

  @Transactional()
  async create(who: Principal, dto: CreateProxyDto): Promise<ProxyDto> {
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
    await this.proxies.insert(proxy);
    return proxyDto(proxy);
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

  /** PUT replaces name, destination and `require_auth` (omitted: true); PATCH changes what it names. */
  @Transactional()
  async update(who: Principal, id: string, dto: PatchProxyDto, replace: boolean): Promise<ProxyDto> {
    const proxy = await this.findOwned(who, id, true);
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
    await this.proxies.update(who.tenantId, id, changes);
    return proxyDto({ ...proxy, ...changes });
  }

  @Transactional()
  async delete(who: Principal, id: string): Promise<void> {
    if (!(await this.proxies.delete(who.tenantId, id))) throw ProxiesException.notFound();
  }

  private async findOwned(who: Principal, id: string, lock = false): Promise<ProxyEntity> {
    const proxy = await this.proxies.findOne(who.tenantId, id, lock);
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
