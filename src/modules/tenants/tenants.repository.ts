import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import {
  SealedDataKey,
  StoredTenantKey,
  TenantKeyStore,
  TenantWrappedKey,
  WrappedTenantKey,
} from '../../common/crypto/tenant-key.store';
import { SYSTEM_TENANT_ID } from '../../common/audit/system-tenant';
import type { Change, Queryable } from '../../common/unit-of-work/change';
import { LOCK_KEYS } from '../../database/data-source';
import { GenerateSql } from '../../database/generate-sql';
import {
  columnsOf,
  entitiesOf,
  insertEntity,
  insertSql,
  queryRows,
  rowsOf,
  type RowOf,
  select,
} from '../../database/table';
import { TenantDataKeyEntity } from './tenant-data-key.entity';
import { TenantEntity } from './tenant.entity';

/** A tenant as raw SQL answers it, and its wrapped key's columns. */
type TenantRow = RowOf<TenantEntity>;
const KEY = ['key_version', 'wrapped_key'] as const;
/** Those columns where the statement answers only tenants whose key is set (both are set together). */
type KeyColumns = { [C in (typeof KEY)[number]]: NonNullable<TenantRow[C]> };

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_AT = new Date('2026-01-01T00:00:00.000Z');
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

  @GenerateSql({
    change: true,
    params: [
      { id: EXAMPLE_TENANT, name: 'Example', keyVersion: null, wrappedKey: null, createdAt: EXAMPLE_AT },
    ],
  })
  async insert(change: Change, tenant: TenantEntity): Promise<void> {
    const { sql, params } = insertEntity(TenantEntity, tenant);
    await change.query(sql, params);
  }

  @GenerateSql({ params: [EXAMPLE_TENANT] })
  async findById(id: string): Promise<TenantEntity | null> {
    const [tenant] = await select(
      this.dataSource,
      entitiesOf(TenantEntity),
      (columns) => `SELECT ${columns} FROM tenants WHERE id = $1`,
      [id],
    );
    return tenant ?? null;
  }

  /** How many tenants there are, as the change sees them (under the bootstrap lock); not the system one. */
  @GenerateSql({ change: true, params: [], answers: [[{ tenants: 1 }]] })
  async count(change: Change): Promise<number> {
    const [{ tenants }] = await queryRows<{ tenants: number }>(
      change,
      'SELECT count(*)::int AS tenants FROM tenants WHERE id <> $1',
      [SYSTEM_TENANT_ID],
    );
    return tenants;
  }

  /** The system tenant's row (docs/keys.md), made once: no key, no application. */
  @GenerateSql({ change: true, params: [] })
  async ensureSystemTenant(change: Change): Promise<void> {
    await change.query(
      `${insertSql(TenantEntity, { id: '$1', name: '$2', created_at: 'clock_timestamp()' })} ON CONFLICT (id) DO NOTHING`,
      [SYSTEM_TENANT_ID, 'system'],
    );
  }

  /** `pg_advisory_xact_lock` of first-start bootstrap, held until the change ends. */
  @GenerateSql({ change: true, params: [] })
  async lockBootstrap(change: Change): Promise<void> {
    await change.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEYS.bootstrap]);
  }

  @GenerateSql({ change: true, params: [EXAMPLE_TENANT] })
  async find(db: Queryable, tenantId: string): Promise<StoredTenantKey | undefined> {
    // The generations of its data key with it, in the same round trip (a cache miss, once per tenant).
    const [tenant] = await queryRows<
      Pick<TenantRow, (typeof KEY)[number]> & { generations: number[]; sealed_keys: string[] }
    >(
      db,
      `SELECT ${columnsOf(TenantEntity, 't', { only: KEY })},
          ARRAY(SELECT generation FROM tenant_data_keys d WHERE d.tenant_id = t.id ORDER BY generation) AS generations,
          ARRAY(SELECT encode(sealed_key, 'base64') FROM tenant_data_keys d WHERE d.tenant_id = t.id
                 ORDER BY generation) AS sealed_keys
        FROM tenants t WHERE id = $1`,
      [tenantId],
    );
    if (!tenant) return undefined;
    return {
      keyVersion: tenant.key_version,
      wrappedKey: tenant.wrapped_key,
      dataKeys: tenant.generations.map((generation, i) => ({
        generation,
        sealedKey: Buffer.from(tenant.sealed_keys[i], 'base64'),
      })),
    };
  }

  @GenerateSql({ change: true, params: [] })
  async lastDataKeys(change: Change): Promise<{ tenantId: string; generation: number }[]> {
    const rows = await queryRows<{ id: string; generation: number }>(
      change,
      `SELECT t.id, COALESCE(max(d.generation), 0)::int AS generation
         FROM tenants t LEFT JOIN tenant_data_keys d ON d.tenant_id = t.id
        WHERE t.wrapped_key IS NOT NULL AND t.id <> $1 GROUP BY t.id ORDER BY t.id`,
      [SYSTEM_TENANT_ID],
    );
    return rows.map((row) => ({ tenantId: row.id, generation: row.generation }));
  }

  @GenerateSql({
    change: true,
    params: [[{ tenantId: EXAMPLE_TENANT, generation: 1, sealedKey: Buffer.alloc(60, 7) }]],
  })
  async addDataKeys(change: Change, keys: (SealedDataKey & { tenantId: string })[]): Promise<void> {
    if (!keys.length) return;
    await change.query(
      `INSERT INTO tenant_data_keys (${columnsOf(TenantDataKeyEntity, undefined, { only: ['tenant_id', 'generation', 'sealed_key'] })})
        SELECT id, g, decode(k, 'base64') FROM unnest($1::uuid[], $2::int[], $3::text[]) AS v(id, g, k)`,
      [
        keys.map((k) => k.tenantId),
        keys.map((k) => k.generation),
        keys.map((k) => k.sealedKey.toString('base64')),
      ],
    );
  }

  @GenerateSql({
    change: true,
    params: [EXAMPLE_TENANT, EXAMPLE_KEY],
    answers: [{ rows: [{ key_version: 'v1', wrapped_key: Buffer.alloc(0) }], rowCount: 1 }],
  })
  async setIfUnset(change: Change, tenantId: string, key: WrappedTenantKey): Promise<WrappedTenantKey> {
    const rows = await queryRows<KeyColumns>(
      change,
      `UPDATE tenants SET key_version = COALESCE(key_version, $2), wrapped_key = COALESCE(wrapped_key, $3)
        WHERE id = $1 RETURNING ${columnsOf(TenantEntity, undefined, { only: KEY })}`,
      [tenantId, key.keyVersion, key.wrappedKey],
    );
    return { keyVersion: rows[0].key_version, wrappedKey: rows[0].wrapped_key };
  }

  @GenerateSql(
    { name: 'lockWrappedUnderOther', change: true, params: ['v2'] },
    { name: 'lockWrappedUnderOtherBatch', change: true, params: ['v2', 100] },
  )
  async lockWrappedUnderOther(
    change: Change,
    keyVersion: string,
    limit?: number,
  ): Promise<TenantWrappedKey[]> {
    // A batch (`limit`) takes the next tenants no other rotation holds; without one, every tenant.
    const rows = await queryRows<Pick<TenantRow, 'id'> & KeyColumns>(
      change,
      limit === undefined
        ? `SELECT ${columnsOf(TenantEntity, undefined, { only: ['id', ...KEY] })} FROM tenants WHERE key_version <> $1 FOR UPDATE`
        : `SELECT ${columnsOf(TenantEntity, undefined, { only: ['id', ...KEY] })} FROM tenants WHERE key_version <> $1
            ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`,
      limit === undefined ? [keyVersion] : [keyVersion, limit],
    );
    return rows.map((row) => ({
      tenantId: row.id,
      keyVersion: row.key_version,
      wrappedKey: row.wrapped_key,
    }));
  }

  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, EXAMPLE_KEY] })
  async replace(change: Change, tenantId: string, key: WrappedTenantKey): Promise<void> {
    await change.query('UPDATE tenants SET key_version = $2, wrapped_key = $3 WHERE id = $1', [
      tenantId,
      key.keyVersion,
      key.wrappedKey,
    ]);
  }

  @GenerateSql({ change: true, params: [] })
  async countByVersion(change: Change): Promise<{ keyVersion: string; tenants: number }[]> {
    const rows = await queryRows<Pick<KeyColumns, 'key_version'> & { tenants: number }>(
      change,
      `SELECT key_version, count(*)::int AS tenants FROM tenants
        WHERE wrapped_key IS NOT NULL GROUP BY key_version ORDER BY key_version`,
    );
    return rows.map((row) => ({ keyVersion: row.key_version, tenants: row.tenants }));
  }

  @GenerateSql({ change: true, params: ['v1'] })
  async sample(change: Change, keyVersion: string): Promise<TenantWrappedKey | undefined> {
    const [tenant] = await select(
      change,
      rowsOf(TenantEntity, { only: ['id', ...KEY] }),
      (columns) =>
        `SELECT ${columns} FROM tenants WHERE key_version = $1 AND wrapped_key IS NOT NULL LIMIT 1`,
      [keyVersion],
    );
    return tenant?.wrapped_key
      ? { tenantId: tenant.id, keyVersion, wrappedKey: tenant.wrapped_key }
      : undefined;
  }
}
