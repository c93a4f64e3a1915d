import { Global, Logger, Module } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { loadMasterKeys, MasterKeyRing } from './master-keys';
import { TenantKeysService } from './tenant-keys.service';

@Global()
@Module({
  providers: [
    {
      provide: MasterKeyRing,
      inject: [AppConfig],
      useFactory: (config: AppConfig) =>
        loadMasterKeys(config, (message) => new Logger('Encryption').warn(message)),
    },
    TenantKeysService,
  ],
  exports: [MasterKeyRing, TenantKeysService],
})
export class CryptoModule {}
