import { Injectable } from '@nestjs/common';
import { DataSource, type Repository } from 'typeorm';
import type { Change } from '../../common/unit-of-work/change';
import { ProxyEntity } from './entities/proxy.entity';

export interface ProxyFilter {
  tenantId: string;
  ids?: string[];
  /** Case-insensitive part of the name. */
  name?: string;
}

export type ProxyChanges = Pick<
  ProxyEntity,
  'name' | 'destinationUrl' | 'requireAuth' | 'modifiedBy' | 'modifiedAt'
>;

const likePattern = (text: string): string => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Pre-configured proxies (`proxies`): reads outside any change go through the pool; writes, and the
 * reads a write makes (row locks), take the change they belong to.
 */
@Injectable()
export class ProxiesRepository {
  constructor(private readonly dataSource: DataSource) {}

  private get proxies(): Repository<ProxyEntity> {
    return this.dataSource.getRepository(ProxyEntity);
  }

  async insert(change: Change, proxy: ProxyEntity): Promise<void> {
    await change.manager.getRepository(ProxyEntity).insert(proxy);
  }

  findOne(tenantId: string, id: string): Promise<ProxyEntity | null> {
    return this.proxies.findOne({ where: { tenantId, id } });
  }

  /** The proxy, its row locked until the change ends. */
  findLocked(change: Change, tenantId: string, id: string): Promise<ProxyEntity | null> {
    return change.manager.getRepository(ProxyEntity).findOne({
      where: { tenantId, id },
      lock: { mode: 'pessimistic_write' },
    });
  }

  /** The proxy a request names in `BT-PROXY-KEY`: the one lookup without a tenant (the key is global). */
  findByKey(key: string): Promise<ProxyEntity | null> {
    return this.proxies.findOne({ where: { key } });
  }

  /** Up to `take` proxies oldest first after skipping `skip`, and how many match in all. */
  async page(
    filter: ProxyFilter,
    skip: number,
    take: number,
  ): Promise<{ total: number; rows: ProxyEntity[] }> {
    const qb = this.proxies
      .createQueryBuilder('p')
      .where('p.tenant_id = :tenant', { tenant: filter.tenantId })
      .orderBy('p.created_at', 'ASC')
      .addOrderBy('p.id', 'ASC');
    if (filter.ids) qb.andWhere('p.id IN (:...ids)', { ids: filter.ids });
    if (filter.name) qb.andWhere(`p.name ILIKE :name ESCAPE '\\'`, { name: likePattern(filter.name) });
    const [rows, total] = await qb.skip(skip).take(take).getManyAndCount();
    return { total, rows };
  }

  async update(change: Change, tenantId: string, id: string, changes: ProxyChanges): Promise<void> {
    await change.manager.getRepository(ProxyEntity).update({ tenantId, id }, changes);
  }

  /** True when a row was deleted. */
  async delete(change: Change, tenantId: string, id: string): Promise<boolean> {
    const result = await change.manager.getRepository(ProxyEntity).delete({ tenantId, id });
    return (result.affected ?? 0) > 0;
  }
}
