import { Module } from '@nestjs/common';
import { TenantsRepositoryModule } from '../tenants/tenants-repository.module';
import { SealService } from './seal.service';
import { SealedGuard } from './sealed.guard';
import { SysController } from './sys.controller';

/** Keys under custody: the sealed server of KEY_PROVIDER=split and its custodians' routes. */
@Module({
  imports: [TenantsRepositoryModule],
  controllers: [SysController],
  providers: [SealService, SealedGuard],
  exports: [SealedGuard],
})
export class CustodyModule {}
