import { Global, Logger, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { verifyMasterKeys } from './master-key-checks';
import { loadMasterKeys, MasterKeyRing } from './master-keys';
import { TenantKeysService } from './tenant-keys.service';

@Global()
@Module({
  providers: [
    {
      // The server and the CLI both stop here when their keys do not fit the database (section 15).
      provide: MasterKeyRing,
      inject: [AppConfig, DataSource],
      useFactory: async (config: AppConfig, dataSource: DataSource) => {
        try {
          const ring = loadMasterKeys(config, (message) => new Logger('Encryption').warn(message));
          await verifyMasterKeys(ring, dataSource);
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
})
export class CryptoModule {}
