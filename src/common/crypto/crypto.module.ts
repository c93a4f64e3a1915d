import { DynamicModule, Global, Logger, Module, Type } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { DatabaseModule } from '../../database/database.module';
import { UnitOfWork } from '../unit-of-work/unit-of-work';
import { MasterKeyCheckEntity } from './entities/master-key-check.entity';
import { verifyMasterKeys } from './master-key-checks';
import { MasterKeyChecksRepository } from './master-key-checks.repository';
import { loadMasterKeys, MasterKeyRing } from './master-keys';
import { TenantKeyStore } from './tenant-key.store';
import { TenantKeysService } from './tenant-keys.service';

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
          inject: [AppConfig, DataSource, UnitOfWork, MasterKeyChecksRepository, TenantKeyStore],
          useFactory: async (
            config: AppConfig,
            dataSource: DataSource,
            work: UnitOfWork,
            checks: MasterKeyChecksRepository,
            tenantKeys: TenantKeyStore,
          ) => {
            try {
              const ring = loadMasterKeys(config, (message) => new Logger('Encryption').warn(message));
              await verifyMasterKeys(ring, { work, checks, tenantKeys });
              return ring;
            } catch (error) {
              // Nothing else will close the database: the application never finishes starting.
              await dataSource.destroy();
              throw error;
            }
          },
        },
        TenantKeysService,
      ],
      exports: [MasterKeyRing, TenantKeysService],
    };
  }
}
