import { Injectable, Optional } from '@nestjs/common';
import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { ChangeNotifications } from '../../database/change-notifications';
import { BASE62 } from '../auth/api-key';
import { open, seal } from './aead';
import type { Change } from '../unit-of-work/change';
import { UnitOfWork } from '../unit-of-work/unit-of-work';
import { MasterKeyRing } from './master-keys';
import { TenantKeyStore, WrappedTenantKey } from './tenant-key.store';

/** A generation of a tenant's data key: what token data and CVCs are sealed under. */
export interface DataKey {
  generation: number;
  key: Buffer;
}

/** The keys a tenant's data is protected with, all derived from (or sealed under) its one wrapped root key. */
export interface TenantKeys {
  /** AES-256-GCM key for connection secrets, webhook secrets, approval links, idempotency records. */
  encryption: Buffer;
  /** The data key new token data and CVCs are sealed under (its last generation). */
  data: DataKey;
  /**
   * Every generation of its data key still kept, by number: 0 is `encryption` (before any rotation),
   * later ones random keys sealed under the root key (`vault keys rotate --tenant-keys`).
   */
  dataKeys: ReadonlyMap<number, Buffer>;
  /** HMAC key for fingerprints. */
  fingerprint: Buffer;
  /** HMAC key for search index digests. */
  searchIndex: Buffer;
  /** HMAC key for idempotency request digests. */
  idempotency: Buffer;
}

const CACHE_LIMIT = 10_000;
/**
 * How long an unwrapped data key stays in memory when the KEK is in an HSM (KEY_PROVIDER=pkcs11): after
 * it, the next use asks the token again, so that a token taken away stops every tenant within 5 minutes.
 */
export const HSM_CACHE_MS = 5 * 60_000;

function derive(root: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', root, Buffer.alloc(0), `vault:${purpose}`, 32));
}

export const wrapAad = (tenantId: string): string => `tenant-key:${tenantId}`;
const dataKeyAad = (tenantId: string, generation: number): string => `data-key:${tenantId}:${generation}`;

/** A token sealed under a generation of its tenant's data key that no longer exists (or not yet here). */
export class UnknownDataKeyError extends Error {
  constructor(tenantId: string, generation: number) {
    super(`generation ${generation} of the data key of tenant ${tenantId} is not known`);
  }
}

export class UnknownMasterKeyError extends Error {
  constructor(version: string) {
    super(`tenant key is wrapped by master key ${version}, which is not configured`);
  }
}

/**
 * A tenant's keys asked for, and not cached, from the work of a transaction change that was not handed
 * in: reading them through the pool would wait for the connection the change holds, for ever on the
 * embedded database (a pool of one). Load them before the change opens, or pass the change.
 */
export class KeysInsideChangeError extends Error {
  constructor(tenantId: string) {
    super(
      `the keys of tenant ${tenantId} were asked for inside a transaction change, not cached: reading them ` +
        'through the pool would wait for the connection the change holds (for ever on the embedded ' +
        'database). Load them before the change opens, or pass the change to keysFor',
    );
  }
}

/**
 * Per-tenant envelope encryption: a random 32-byte root key per tenant, wrapped (AES-256-GCM) by the
 * active master key, unwrapped on first use and cached; purpose keys are derived from it with HKDF.
 */
@Injectable()
export class TenantKeysService {
  /** `sealing`: the key generations of the data key are sealed under (derived from the root key). */
  private readonly cache = new Map<string, { keys: TenantKeys; sealing: Buffer; at: number }>();

  constructor(
    private readonly ring: MasterKeyRing,
    private readonly store: TenantKeyStore,
    private readonly work: UnitOfWork,
    @Optional() changes?: ChangeNotifications,
  ) {
    // A new generation of a data key (a rotation's start on any instance): seal under it from now on.
    changes?.onChange((table) => {
      if (table === undefined || table === 'tenant_data_keys') this.cache.clear();
    });
  }

  /** Forgets every cached key: a rotation in this process made new generations. */
  forget(): void {
    this.cache.clear();
  }

  /**
   * Runs `run` once the master keys are there: at once, or, on a sealed server (KEY_PROVIDER=split),
   * when its custodians have unsealed it. For work that starts by itself and needs keys (deliveries,
   * the first tenant).
   */
  whenUnsealed(run: () => void): void {
    this.ring.whenUnsealed(run);
  }

  /** True while a KEY_PROVIDER=split server waits for its custodians' shares. */
  get sealed(): boolean {
    return this.ring.sealed;
  }

  /** A new root key for a tenant being created, wrapped under the active master key. */
  newTenantKey(tenantId: string): WrappedTenantKey {
    const active = this.ring.active;
    return { keyVersion: active.version, wrappedKey: active.wrap(randomBytes(32), wrapAad(tenantId)) };
  }

  /**
   * The tenant's keys. A caller inside a change passes it (`within`): a miss of the cache then reads in
   * its transaction, which may hold the pool's only connection (the embedded database has one). A
   * one-statement change holds no connection before its end, so the pool serves it. A miss from the work
   * of a transaction change not passed fails (`KeysInsideChangeError`) rather than wait for ever.
   */
  async keysFor(tenantId: string, within?: Change): Promise<TenantKeys> {
    return (await this.entry(tenantId, within)).keys;
  }

  /**
   * The tenant's keys holding every generation of its data key named (those its tokens are sealed
   * under): a generation not cached (made by a rotation on another instance a moment ago) reads the
   * keys again once; one still unknown throws `UnknownDataKeyError`.
   */
  async keysWith(tenantId: string, generations: Iterable<number>, within?: Change): Promise<TenantKeys> {
    const wanted = [...new Set(generations)];
    let keys = await this.keysFor(tenantId, within);
    if (wanted.every((g) => keys.dataKeys.has(g))) return keys;
    this.cache.delete(tenantId);
    keys = await this.keysFor(tenantId, within);
    const missing = wanted.find((g) => !keys.dataKeys.has(g));
    if (missing !== undefined) throw new UnknownDataKeyError(tenantId, missing);
    return keys;
  }

  /**
   * A new generation of every tenant's data key (the system tenant has none), sealed under its root key
   * and stored in `change` (`vault keys rotate --tenant-keys`): from its commit, new token data and CVCs
   * are sealed under it (on other instances once their change notification arrives). Answers how many.
   */
  async makeDataKeys(change: Change): Promise<number> {
    const made = [];
    for (const { tenantId, generation } of await this.store.lastDataKeys(change)) {
      const { sealing } = await this.entry(tenantId, change);
      const next = generation + 1;
      made.push({
        tenantId,
        generation: next,
        sealedKey: seal(sealing, randomBytes(32), dataKeyAad(tenantId, next)),
      });
    }
    await this.store.addDataKeys(change, made);
    this.cache.clear();
    return made.length;
  }

  private async entry(tenantId: string, within?: Change) {
    const cached = this.cache.get(tenantId);
    if (cached && (this.ring.provider !== 'pkcs11' || Date.now() - cached.at < HSM_CACHE_MS)) return cached;
    const transaction = within?.mode === 'transaction' ? within : undefined;
    if (!transaction && this.work.holding) throw new KeysInsideChangeError(tenantId);
    const stored = await this.store.find(transaction ?? this.work.reader, tenantId);
    if (!stored) throw new Error(`tenant ${tenantId} does not exist`);
    let { keyVersion: version, wrappedKey: wrapped } = stored;
    if (!wrapped) {
      // A tenant created before envelope encryption existed: give it a key now, once (in the caller's
      // transaction, or in a change of its own: whoever races, the first key stays).
      const fresh = this.newTenantKey(tenantId);
      ({ keyVersion: version, wrappedKey: wrapped } = transaction
        ? await this.store.setIfUnset(transaction, tenantId, fresh)
        : await this.work.transaction({}, (change) => this.store.setIfUnset(change, tenantId, fresh)));
    }
    const root = this.unwrap(tenantId, version, wrapped);
    const encryption = derive(root, 'encryption');
    const sealing = derive(root, 'data-keys');
    const dataKeys = new Map<number, Buffer>([[0, encryption]]);
    for (const { generation, sealedKey } of stored.dataKeys)
      dataKeys.set(generation, open(sealing, sealedKey, dataKeyAad(tenantId, generation)));
    const last = Math.max(...dataKeys.keys());
    const keys: TenantKeys = {
      encryption,
      data: { generation: last, key: dataKeys.get(last)! },
      dataKeys,
      fingerprint: derive(root, 'fingerprint'),
      searchIndex: derive(root, 'search-index'),
      idempotency: derive(root, 'idempotency'),
    };
    const entry = { keys, sealing, at: Date.now() };
    this.cache.delete(tenantId);
    if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(tenantId, entry);
    return entry;
  }

  /**
   * Re-wraps every tenant root key not yet under the active master key; returns how many changed. In
   * `within` when given (a change of provider re-wraps everything in one change).
   */
  async rotate(within?: Change): Promise<{ rewrapped: number; active: string }> {
    const active = this.ring.active;
    // The command line's (or the control socket's) change, or the caller's: nothing audited.
    const run = async (change: Change) => {
      const rows = await this.store.lockWrappedUnderOther(change, active.version);
      for (const row of rows) {
        const root = this.unwrap(row.tenantId, row.keyVersion, row.wrappedKey);
        await this.store.replace(change, row.tenantId, {
          keyVersion: active.version,
          wrappedKey: active.wrap(root, wrapAad(row.tenantId)),
        });
      }
      this.cache.clear();
      return { rewrapped: rows.length, active: active.version };
    };
    return within ? run(within) : this.work.transaction({}, run);
  }

  /**
   * `vault keys rotate`: re-wraps the tenant keys not yet under the active master key in batches of
   * `batch`, each its own change, so that a crash loses at most the batch in flight and running it again
   * goes on from there; reads never wait (a data key opens under whichever version wraps it). `progress`
   * hears after each batch how many are under the active version of how many.
   */
  async rotateInBatches(
    batch: number,
    progress: (done: number, total: number) => void = () => undefined,
  ): Promise<{ rewrapped: number; active: string }> {
    const active = this.ring.active;
    let rewrapped = 0;
    for (;;) {
      const moved = await this.work.transaction({}, async (change) => {
        const rows = await this.store.lockWrappedUnderOther(change, active.version, batch);
        for (const row of rows) {
          const root = this.unwrap(row.tenantId, row.keyVersion, row.wrappedKey);
          await this.store.replace(change, row.tenantId, {
            keyVersion: active.version,
            wrappedKey: active.wrap(root, wrapAad(row.tenantId)),
          });
        }
        const counts = await this.store.countByVersion(change);
        return {
          rows: rows.length,
          done: counts.find((c) => c.keyVersion === active.version)?.tenants ?? 0,
          total: counts.reduce((n, c) => n + c.tenants, 0),
        };
      });
      rewrapped += moved.rows;
      if (moved.rows === 0) break;
      this.cache.clear();
      progress(moved.done, moved.total);
      if (moved.rows < batch) break;
    }
    return { rewrapped, active: active.version };
  }

  private unwrap(tenantId: string, version: string | null, wrapped: Buffer): Buffer {
    const master = version === null ? undefined : this.ring.get(version);
    if (!master) throw new UnknownMasterKeyError(String(version));
    return master.unwrap(wrapped, wrapAad(tenantId));
  }
}

/** Keyed digest as base62 text: equal inputs give equal digests within one key, unrelated ones across keys. */
export function hmacBase62(key: Buffer, value: string): string {
  return BASE62.encode(createHmac('sha256', key).update(value, 'utf8').digest());
}

export function hmac(key: Buffer, value: string): Buffer {
  return createHmac('sha256', key).update(value, 'utf8').digest();
}
