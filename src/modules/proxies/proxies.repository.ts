import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Change } from '../../common/unit-of-work/change';
import { GenerateSql } from '../../database/generate-sql';
import { SqlParams } from '../../database/sql';
import { assignmentsOf, entitiesOf, insertEntity, queryRows, select } from '../../database/table';
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

/** A proxy as the services use it: every column, under its property. */
const PROXY = entitiesOf(ProxyEntity);

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_PROXY = '00000000-0000-4000-8000-000000000002';
const EXAMPLE_AT = new Date('2026-01-01T00:00:00.000Z');
const EXAMPLE: ProxyEntity = {
  tenantId: EXAMPLE_TENANT,
  id: EXAMPLE_PROXY,
  key: 'key_example',
  name: 'Payments',
  destinationUrl: 'https://example.com/payments',
  requireAuth: true,
  createdBy: EXAMPLE_PROXY,
  createdAt: EXAMPLE_AT,
  modifiedBy: null,
  modifiedAt: null,
};

/**
 * Pre-configured proxies (`proxies`): reads outside any change go through the pool; writes, and the
 * reads a write makes (row locks), take the change they belong to.
 */
@Injectable()
export class ProxiesRepository {
  constructor(private readonly dataSource: DataSource) {}

  @GenerateSql({ change: true, params: [EXAMPLE] })
  async insert(change: Change, proxy: ProxyEntity): Promise<void> {
    const { sql, params } = insertEntity(ProxyEntity, proxy);
    await change.query(sql, params);
  }

  @GenerateSql({ params: [EXAMPLE_TENANT, EXAMPLE_PROXY] })
  async findOne(tenantId: string, id: string): Promise<ProxyEntity | null> {
    const [proxy] = await select(
      this.dataSource,
      PROXY,
      (columns) => `SELECT ${columns} FROM proxies WHERE tenant_id = $1 AND id = $2`,
      [tenantId, id],
    );
    return proxy ?? null;
  }

  /** The proxy, its row locked until the change ends. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_PROXY] })
  async findLocked(change: Change, tenantId: string, id: string): Promise<ProxyEntity | null> {
    const [proxy] = await select(
      change,
      PROXY,
      (columns) => `SELECT ${columns} FROM proxies WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
      [tenantId, id],
    );
    return proxy ?? null;
  }

  /** The proxy a request names in `BT-PROXY-KEY`: the one lookup without a tenant (the key is global). */
  @GenerateSql({ params: ['key_example'] })
  async findByKey(key: string): Promise<ProxyEntity | null> {
    const [proxy] = await select(
      this.dataSource,
      PROXY,
      (columns) => `SELECT ${columns} FROM proxies WHERE key = $1 LIMIT 1`,
      [key],
    );
    return proxy ?? null;
  }

  /** Up to `take` proxies oldest first after skipping `skip`, and how many match in all. */
  @GenerateSql(
    { name: 'all', params: [{ tenantId: EXAMPLE_TENANT }, 0, 20], answers: [[{ total: 0 }]] },
    {
      name: 'filtered',
      params: [{ tenantId: EXAMPLE_TENANT, ids: [EXAMPLE_PROXY], name: 'pay' }, 20, 20],
      answers: [[{ total: 0 }]],
    },
  )
  async page(
    filter: ProxyFilter,
    skip: number,
    take: number,
  ): Promise<{ total: number; rows: ProxyEntity[] }> {
    const p = new SqlParams();
    const where = [`p.tenant_id = ${p.add(filter.tenantId)}`];
    if (filter.ids) where.push(`p.id = ANY(${p.add(filter.ids)}::uuid[])`);
    if (filter.name) where.push(`p.name ILIKE ${p.add(likePattern(filter.name))} ESCAPE '\\'`);
    const matching = `FROM proxies p WHERE ${where.join(' AND ')}`;
    const [{ total }] = await queryRows<{ total: number }>(
      this.dataSource,
      `SELECT count(*)::int AS total ${matching}`,
      [...p.values],
    );
    const found = await select(
      this.dataSource,
      entitiesOf(ProxyEntity, { alias: 'p' }),
      (columns) => `SELECT ${columns} ${matching}
        ORDER BY p.created_at ASC, p.id ASC OFFSET ${p.add(skip)} LIMIT ${p.add(take)}`,
      p.values,
    );
    return { total, rows: found };
  }

  @GenerateSql({
    change: true,
    params: [
      EXAMPLE_TENANT,
      EXAMPLE_PROXY,
      {
        name: 'Payouts',
        destinationUrl: 'https://example.com/payouts',
        requireAuth: false,
        modifiedBy: EXAMPLE_PROXY,
        modifiedAt: EXAMPLE_AT,
      },
    ],
  })
  async update(change: Change, tenantId: string, id: string, changes: ProxyChanges): Promise<void> {
    const p = new SqlParams();
    const where = `tenant_id = ${p.add(tenantId)} AND id = ${p.add(id)}`;
    await change.query(
      `UPDATE proxies SET ${assignmentsOf(ProxyEntity, p, changes)} WHERE ${where}`,
      p.values,
    );
  }

  /** True when a row was deleted. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_PROXY] })
  async delete(change: Change, tenantId: string, id: string): Promise<boolean> {
    const deleted = await queryRows<{ id: ProxyEntity['id'] }>(
      change,
      'DELETE FROM proxies WHERE tenant_id = $1 AND id = $2 RETURNING id',
      [tenantId, id],
    );
    return deleted.length > 0;
  }
}
