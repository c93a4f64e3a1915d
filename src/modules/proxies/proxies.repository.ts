import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
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

/** Pre-configured proxies (`proxies`); every statement joins the caller's transaction. */
@Injectable()
export class ProxiesRepository {
  constructor(private readonly db: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private get proxies(): Repository<ProxyEntity> {
    return this.db.tx.getRepository(ProxyEntity);
  }

  async insert(proxy: ProxyEntity): Promise<void> {
    await this.proxies.insert(proxy);
  }

  findOne(tenantId: string, id: string, lock = false): Promise<ProxyEntity | null> {
    return this.proxies.findOne({
      where: { tenantId, id },
      ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
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

  async update(tenantId: string, id: string, changes: ProxyChanges): Promise<void> {
    await this.proxies.update({ tenantId, id }, changes);
  }

  /** True when a row was deleted. */
  async delete(tenantId: string, id: string): Promise<boolean> {
    const result = await this.proxies.delete({ tenantId, id });
    return (result.affected ?? 0) > 0;
  }
}
