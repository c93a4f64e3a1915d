import { Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { ApplicationsModule } from '../applications/applications.module';
import { TenantEntity } from './tenant.entity';
import { TenantsController } from './tenants.controller';
import { TenantsRepositoryModule } from './tenants-repository.module';
import { TenantsService } from './tenants.service';

@Module({
  imports: [DatabaseModule.forFeature([TenantEntity]), ApplicationsModule, TenantsRepositoryModule],
  controllers: [TenantsController],
  providers: [TenantsService],
  exports: [TenantsService, TenantsRepositoryModule],
})
export class TenantsModule {}
