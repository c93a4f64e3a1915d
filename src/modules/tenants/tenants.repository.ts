import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { IsNull, Not, Repository } from 'typeorm';
import {
  StoredTenantKey,
  TenantKeyStore,
  TenantWrappedKey,
  WrappedTenantKey,
} from '../../common/crypto/tenant-key.store';
import { LOCK_KEYS } from '../../database/data-source';
import { TenantEntity } from './tenant.entity';

/**
 * The `tenants` table: tenants themselves, and their root keys for CryptoModule (as its
 * `TenantKeyStore`). The table is keyed by the tenant: every query but the cross-tenant ones of key
 * rotation and master-key checks names one. Every statement joins the caller's transaction.
 */
@Injectable()
export class TenantsRepository implements TenantKeyStore {
  constructor(private readonly db: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private get tenants(): Repository<TenantEntity> {
    return this.db.tx.getRepository(TenantEntity);
  }

  async insert(tenant: TenantEntity): Promise<void> {
    await this.tenants.insert(tenant);
  }

  findById(id: string): Promise<TenantEntity | null> {
    return this.tenants.findOneBy({ id });
  }

  count(): Promise<number> {
    return this.tenants.count();
  }

  /** `pg_advisory_xact_lock` of first-start bootstrap, held until the transaction ends. */
  async lockBootstrap(): Promise<void> {
    await this.db.tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEYS.bootstrap]);
  }

  async find(tenantId: string): Promise<StoredTenantKey | undefined> {
    const tenant = await this.tenants.findOne({
      where: { id: tenantId },
      select: { id: true, keyVersion: true, wrappedKey: true },
    });
    return tenant ? { keyVersion: tenant.keyVersion, wrappedKey: tenant.wrappedKey } : undefined;
  }

  async setIfUnset(tenantId: string, key: WrappedTenantKey): Promise<WrappedTenantKey> {
    const [rows]: [{ key_version: string; wrapped_key: Buffer }[], number] = await this.db.tx.query(
      `UPDATE tenants SET key_version = COALESCE(key_version, $2), wrapped_key = COALESCE(wrapped_key, $3)
        WHERE id = $1 RETURNING key_version, wrapped_key`,
      [tenantId, key.keyVersion, key.wrappedKey],
    );
    return { keyVersion: rows[0].key_version, wrappedKey: rows[0].wrapped_key };
  }

  async lockWrappedUnderOther(keyVersion: string): Promise<TenantWrappedKey[]> {
    const rows: { id: string; key_version: string; wrapped_key: Buffer }[] = await this.db.tx.query(
      'SELECT id, key_version, wrapped_key FROM tenants WHERE key_version <> $1 FOR UPDATE',
      [keyVersion],
    );
    return rows.map((row) => ({
      tenantId: row.id,
      keyVersion: row.key_version,
      wrappedKey: row.wrapped_key,
    }));
  }

  async replace(tenantId: string, key: WrappedTenantKey): Promise<void> {
    await this.tenants.update({ id: tenantId }, { keyVersion: key.keyVersion, wrappedKey: key.wrappedKey });
  }

  async countByVersion(): Promise<{ keyVersion: string; tenants: number }[]> {
    const rows: { key_version: string; tenants: number }[] = await this.db.tx.query(
      `SELECT key_version, count(*)::int AS tenants FROM tenants
        WHERE wrapped_key IS NOT NULL GROUP BY key_version ORDER BY key_version`,
    );
    return rows.map((row) => ({ keyVersion: row.key_version, tenants: row.tenants }));
  }

  async sample(keyVersion: string): Promise<TenantWrappedKey | undefined> {
    const tenant = await this.tenants.findOne({
      where: { keyVersion, wrappedKey: Not(IsNull()) },
      select: { id: true, keyVersion: true, wrappedKey: true },
    });
    return tenant?.wrappedKey
      ? { tenantId: tenant.id, keyVersion, wrappedKey: tenant.wrappedKey }
      : undefined;
  }
}
