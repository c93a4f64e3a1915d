import type { Change, Queryable } from '../unit-of-work/change';

/** A tenant's root key, sealed (AES-256-GCM) under a master key version. */
export interface WrappedTenantKey {
  keyVersion: string;
  wrappedKey: Buffer;
}

export interface TenantWrappedKey extends WrappedTenantKey {
  tenantId: string;
}

/** A generation of a tenant's data key (`vault keys rotate --tenant-keys`), sealed under its root key. */
export interface SealedDataKey {
  generation: number;
  sealedKey: Buffer;
}

/**
 * A tenant's key as stored: both null for a tenant created before envelope encryption; with the
 * generations of its data key made by rotations (none before the first: generation 0 is derived).
 */
export interface StoredTenantKey {
  keyVersion: string | null;
  wrappedKey: Buffer | null;
  dataKeys: SealedDataKey[];
}

/**
 * Where tenants' root keys are kept. A port: the keys live on the tenants table, which belongs to the
 * tenants module, and common/ reads no domain table; that module implements it and hands it to
 * `CryptoModule.forRoot`. Writes and locks run in the change they are given.
 */
export abstract class TenantKeyStore {
  /**
   * The tenant's key; undefined when there is no such tenant. Read through `db`: the caller's change
   * when it has one open (its transaction may hold the pool's only connection), else the pool.
   */
  abstract find(db: Queryable, tenantId: string): Promise<StoredTenantKey | undefined>;

  /** Stores `key` for a tenant that has none (once, whoever races); returns the key the tenant has now. */
  abstract setIfUnset(change: Change, tenantId: string, key: WrappedTenantKey): Promise<WrappedTenantKey>;

  /**
   * Every tenant whose key is wrapped under a version other than `keyVersion`, locked until the change
   * ends; with `limit`, at most that many, skipping those another change holds (a rotation's batch).
   */
  abstract lockWrappedUnderOther(
    change: Change,
    keyVersion: string,
    limit?: number,
  ): Promise<TenantWrappedKey[]>;

  /** Replaces a tenant's key (re-wrapped under another master key). */
  abstract replace(change: Change, tenantId: string, key: WrappedTenantKey): Promise<void>;

  /** How many tenants have a key wrapped under each version, by version (read in the change). */
  abstract countByVersion(change: Change): Promise<{ keyVersion: string; tenants: number }[]>;

  /** Some tenant's key wrapped under `keyVersion`, to try a master key on; undefined when none is. */
  abstract sample(change: Change, keyVersion: string): Promise<TenantWrappedKey | undefined>;

  /** Every tenant with a root key (not the system tenant), with the last generation of its data key (0: none made). */
  abstract lastDataKeys(change: Change): Promise<{ tenantId: string; generation: number }[]>;

  /** Adds generations of tenants' data keys (a rotation's start), in the change. */
  abstract addDataKeys(change: Change, keys: (SealedDataKey & { tenantId: string })[]): Promise<void>;

  /** Makes the system tenant's row (no key, no application) unless it exists; in the change. */
  abstract ensureSystemTenant(change: Change): Promise<void>;
}
