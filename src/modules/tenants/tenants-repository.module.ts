import { Module } from '@nestjs/common';
import { TenantKeyStore } from '../../common/crypto/tenant-key.store';
import { DatabaseModule } from '../../database/database.module';
import { TenantDataKeyEntity } from './tenant-data-key.entity';
import { TenantEntity } from './tenant.entity';
import { TenantsRepository } from './tenants.repository';

/**
 * The tenants table on its own, so that CryptoModule (given it through `CryptoModule.forRoot`, for the
 * tenants' root keys) and TenantsModule share one repository without importing each other.
 */
@Module({
  imports: [DatabaseModule.forFeature([TenantEntity, TenantDataKeyEntity])],
  providers: [TenantsRepository, { provide: TenantKeyStore, useExisting: TenantsRepository }],
  exports: [TenantsRepository, TenantKeyStore],
})
export class TenantsRepositoryModule {}
