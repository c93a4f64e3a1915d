import type { KeyProviderName } from './key-encryption-key';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { UnitOfWork } from '../unit-of-work/unit-of-work';
import { MasterKeyChecksRepository } from './master-key-checks.repository';
import { MasterKeyRing } from './master-keys';
import { TenantKeyStore } from './tenant-key.store';

/** `vault keys status`: each key-encrypting key version, who holds it, and how many tenant keys it wraps. */
export interface KeyStatus {
  provider: KeyProviderName;
  versions: {
    version: string;
    provider: KeyProviderName;
    /** The version new tenant keys are wrapped under, for this process's provider. */
    active: boolean;
    /** Tenant data keys wrapped under it. */
    wraps: number;
    /** Under `split`: how many shares open it, of how many made. */
    threshold?: number;
    shares?: number;
  }[];
  /** Tenant keys under the active version of all, while some are not (a rotation pending or interrupted). */
  rotation: { done: number; total: number } | null;
}

/**
 * What `vault keys status` prints, from the database's records alone (it needs no key: it runs on a
 * sealed deployment too). The active version is the last of ENCRYPTION_KEYS under `env` (the process's
 * ring), the last ceremony's under `split`, the token's highest under `pkcs11`.
 */
@Injectable()
export class KeyStatusReader {
  constructor(
    private readonly work: UnitOfWork,
    private readonly checks: MasterKeyChecksRepository,
    private readonly tenantKeys: TenantKeyStore,
    private readonly ring: MasterKeyRing,
    private readonly config: AppConfig,
  ) {}

  async read(): Promise<KeyStatus> {
    const { recorded, wrapped } = await this.work.transaction({}, async (change) => ({
      recorded: await this.checks.all(change),
      wrapped: await this.tenantKeys.countByVersion(change),
    }));
    const provider = this.config.KEY_PROVIDER;
    const active =
      provider === 'split'
        ? recorded.filter((check) => check.provider === 'split').at(-1)?.version
        : this.ring.sealed
          ? undefined // pkcs11 with no key in the token yet
          : this.ring.active.version;
    return {
      provider,
      versions: recorded.map((check) => ({
        version: check.version,
        provider: check.provider ?? 'env',
        active: check.version === active,
        wraps: wrapped.find((row) => row.keyVersion === check.version)?.tenants ?? 0,
        ...(check.provider === 'split' ? { threshold: check.threshold!, shares: check.shares! } : {}),
      })),
      // Pending or interrupted: some tenant key is not yet under the active version (`vault keys rotate`).
      rotation:
        active !== undefined && wrapped.some((row) => row.keyVersion !== active)
          ? {
              done: wrapped.find((row) => row.keyVersion === active)?.tenants ?? 0,
              total: wrapped.reduce((n, row) => n + row.tenants, 0),
            }
          : null,
    };
  }
}
