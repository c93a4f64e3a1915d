import { Module } from '@nestjs/common';
import { TenantKeyStore } from '../../common/crypto/tenant-key.store';
import { TenantsRepository } from './tenants.repository';

/**
 * The tenants table on its own, so that CryptoModule (given it through `CryptoModule.forRoot`, for the
 * tenants' root keys) and TenantsModule share one repository without importing each other.
 */
@Module({
  providers: [TenantsRepository, { provide: TenantKeyStore, useExisting: TenantsRepository }],
  exports: [TenantsRepository, TenantKeyStore],
})
export class TenantsRepositoryModule {}
