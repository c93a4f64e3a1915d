import { DynamicModule, Global, Logger, Module, Type } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { ConfigError } from '../../config/load-config';
import { DatabaseModule } from '../../database/database.module';
import { UnitOfWork } from '../unit-of-work/unit-of-work';
import { MasterKeyCheckEntity } from './entities/master-key-check.entity';
import { verifyMasterKeys } from './master-key-checks';
import { MasterKeyChecksRepository } from './master-key-checks.repository';
import { loadMasterKeys, MasterKeyRing } from './master-keys';
import { TenantKeyStore } from './tenant-key.store';
import { KeyCeremony } from './key-ceremony';
import { KeyStatusReader } from './key-status';
import { Metrics } from '../metrics/metrics';
import { HsmKeys } from './pkcs11/hsm-keys';
import { KeyRecords } from './key-records';
import { TenantKeysService } from './tenant-keys.service';

/**
 * A server under KEY_PROVIDER=split stops at start, naming what to do, when no ceremony made a split key
 * for this database (its custodians would have nothing to unseal it with). The CLI goes on: it is how
 * the ceremony is run.
 */
async function requireCeremony(
  config: AppConfig,
  work: UnitOfWork,
  checks: MasterKeyChecksRepository,
): Promise<void> {
  if (config.role === 'cli') return;
  const all = await work.transaction({}, (change) => checks.all(change));
  if (!all.some((check) => check.provider === 'split'))
    throw new ConfigError(
      'KEY_PROVIDER=split: no key ceremony is recorded for this database; run `vault keys ceremony --shares N --threshold M` first (docs/keys.md)',
    );
}

@Global()
@Module({ imports: [DatabaseModule.forFeature([MasterKeyCheckEntity])] })
export class CryptoModule {
  /**
   * `keyStore`: a module that provides and exports the `TenantKeyStore` (the tenants table belongs to
   * the tenants module, which nothing in common/ imports).
   */
  static forRoot(keyStore: Type | DynamicModule): DynamicModule {
    return {
      module: CryptoModule,
      imports: [keyStore],
      providers: [
        MasterKeyChecksRepository,
        {
          // The server and the CLI both stop here when their keys do not fit the database.
          provide: MasterKeyRing,
          inject: [
            AppConfig,
            DataSource,
            UnitOfWork,
            MasterKeyChecksRepository,
            TenantKeyStore,
            Metrics,
            KeyRecords,
          ],
          useFactory: async (
            config: AppConfig,
            dataSource: DataSource,
            work: UnitOfWork,
            checks: MasterKeyChecksRepository,
            tenantKeys: TenantKeyStore,
            metrics: Metrics,
            records: KeyRecords,
          ) => {
            try {
              const ring = loadMasterKeys(config, (message) => new Logger('Encryption').warn(message));
              const device = ring.device;
              if (device) {
                metrics.keyProviderCalls(() => device.counts);
                // The HSM going away and coming back, on record in the system log (once each way).
                device.onChange = (available, failure) =>
                  void records.note(
                    null,
                    available ? 'use' : 'refuse',
                    available
                      ? 'The HSM answers again (KEY_PROVIDER=pkcs11)'
                      : `The HSM did not answer (KEY_PROVIDER=pkcs11: ${failure}); requests needing a data key answer 503`,
                  );
              }
              // Sealed (KEY_PROVIDER=split): checked when its custodians' shares open it (SealService).
              if (ring.sealed && ring.provider === 'split') await requireCeremony(config, work, checks);
              else if (ring.sealed)
                return ring; // pkcs11, no key in the token yet: the CLI makes one
              else await verifyMasterKeys(ring, { work, checks, tenantKeys });
              return ring;
            } catch (error) {
              // Nothing else will close the database: the application never finishes starting.
              await dataSource.destroy();
              throw error;
            }
          },
        },
        TenantKeysService,
        KeyCeremony,
        KeyStatusReader,
        HsmKeys,
        KeyRecords,
      ],
      exports: [
        MasterKeyRing,
        TenantKeysService,
        MasterKeyChecksRepository,
        KeyCeremony,
        KeyStatusReader,
        HsmKeys,
        KeyRecords,
      ],
    };
  }
}
