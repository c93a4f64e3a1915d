import { Module } from '@nestjs/common';
import { ApplicationsModule } from '../applications/applications.module';
import { TenantsController } from './tenants.controller';
import { TenantsRepositoryModule } from './tenants-repository.module';
import { TenantsService } from './tenants.service';

@Module({
  imports: [ApplicationsModule, TenantsRepositoryModule],
  controllers: [TenantsController],
  providers: [TenantsService],
  exports: [TenantsService, TenantsRepositoryModule],
})
export class TenantsModule {}
