import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull, Not, Repository } from 'typeorm';
import {
  StoredTenantKey,
  TenantKeyStore,
  TenantWrappedKey,
  WrappedTenantKey,
} from '../../common/crypto/tenant-key.store';
import type { Change, Queryable } from '../../common/unit-of-work/change';
import { LOCK_KEYS } from '../../database/data-source';
import { GenerateSql } from '../../database/generate-sql';
import { columnsOf, type RowOf } from '../../database/table';
import { TenantEntity } from './tenant.entity';

/** A tenant as raw SQL answers it, and its wrapped key's columns. */
type TenantRow = RowOf<TenantEntity>;
const KEY = ['key_version', 'wrapped_key'] as const;
/** Those columns where the statement answers only tenants whose key is set (both are set together). */
type KeyColumns = { [C in (typeof KEY)[number]]: NonNullable<TenantRow[C]> };

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_KEY: WrappedTenantKey = { keyVersion: 'v1', wrappedKey: Buffer.alloc(60, 7) };

/**
 * The `tenants` table: tenants themselves, and their root keys for CryptoModule (as its
 * `TenantKeyStore`). The table is keyed by the tenant: every query but the cross-tenant ones of key
 * rotation and master-key checks names one. Writes and locks run in the change they are given; a
 * tenant read outside any change through the pool.
 */
@Injectable()
export class TenantsRepository implements TenantKeyStore {
  constructor(private readonly dataSource: DataSource) {}

  private tenants(manager: EntityManager = this.dataSource.manager): Repository<TenantEntity> {
    return manager.getRepository(TenantEntity);
  }

  async insert(change: Change, tenant: TenantEntity): Promise<void> {
    await this.tenants(change.manager).insert(tenant);
  }

  findById(id: string): Promise<TenantEntity | null> {
    return this.tenants().findOneBy({ id });
  }

  /** How many tenants there are, as the change sees them (under the bootstrap lock). */
  count(change: Change): Promise<number> {
    return this.tenants(change.manager).count();
  }

  /** `pg_advisory_xact_lock` of first-start bootstrap, held until the change ends. */
  @GenerateSql({ change: true, params: [] })
  async lockBootstrap(change: Change): Promise<void> {
    await change.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEYS.bootstrap]);
  }

  async find(db: Queryable, tenantId: string): Promise<StoredTenantKey | undefined> {
    const tenant = await this.tenants(db.manager).findOne({
      where: { id: tenantId },
      select: { id: true, keyVersion: true, wrappedKey: true },
    });
    return tenant ? { keyVersion: tenant.keyVersion, wrappedKey: tenant.wrappedKey } : undefined;
  }

  @GenerateSql({
    change: true,
    params: [EXAMPLE_TENANT, EXAMPLE_KEY],
    answers: [{ rows: [{ key_version: 'v1', wrapped_key: Buffer.alloc(0) }], rowCount: 1 }],
  })
  async setIfUnset(change: Change, tenantId: string, key: WrappedTenantKey): Promise<WrappedTenantKey> {
    const [rows] = await change.manager.query<[KeyColumns[], number]>(
      `UPDATE tenants SET key_version = COALESCE(key_version, $2), wrapped_key = COALESCE(wrapped_key, $3)
        WHERE id = $1 RETURNING ${columnsOf(TenantEntity, undefined, { only: KEY })}`,
      [tenantId, key.keyVersion, key.wrappedKey],
    );
    return { keyVersion: rows[0].key_version, wrappedKey: rows[0].wrapped_key };
  }

  @GenerateSql({ change: true, params: ['v2'] })
  async lockWrappedUnderOther(change: Change, keyVersion: string): Promise<TenantWrappedKey[]> {
    const rows = await change.query<Pick<TenantRow, 'id'> & KeyColumns>(
      `SELECT ${columnsOf(TenantEntity, undefined, { only: ['id', ...KEY] })} FROM tenants WHERE key_version <> $1 FOR UPDATE`,
      [keyVersion],
    );
    return rows.map((row) => ({
      tenantId: row.id,
      keyVersion: row.key_version,
      wrappedKey: row.wrapped_key,
    }));
  }

  async replace(change: Change, tenantId: string, key: WrappedTenantKey): Promise<void> {
    await this.tenants(change.manager).update(
      { id: tenantId },
      { keyVersion: key.keyVersion, wrappedKey: key.wrappedKey },
    );
  }

  @GenerateSql({ change: true, params: [] })
  async countByVersion(change: Change): Promise<{ keyVersion: string; tenants: number }[]> {
    const rows = await change.query<Pick<KeyColumns, 'key_version'> & { tenants: number }>(
      `SELECT key_version, count(*)::int AS tenants FROM tenants
        WHERE wrapped_key IS NOT NULL GROUP BY key_version ORDER BY key_version`,
    );
    return rows.map((row) => ({ keyVersion: row.key_version, tenants: row.tenants }));
  }

  async sample(change: Change, keyVersion: string): Promise<TenantWrappedKey | undefined> {
    const tenant = await this.tenants(change.manager).findOne({
      where: { keyVersion, wrappedKey: Not(IsNull()) },
      select: { id: true, keyVersion: true, wrappedKey: true },
    });
    return tenant?.wrappedKey
      ? { tenantId: tenant.id, keyVersion, wrappedKey: tenant.wrappedKey }
      : undefined;
  }
}
