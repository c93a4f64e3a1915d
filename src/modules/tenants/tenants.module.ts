import { Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { ApplicationsModule } from '../applications/applications.module';
import { TenantEntity } from './tenant.entity';
import { TenantsController } from './tenants.controller';
import { TenantsService } from './tenants.service';

@Module({
  imports: [DatabaseModule.forFeature([TenantEntity]), ApplicationsModule],
  controllers: [TenantsController],
  providers: [TenantsService],
  exports: [TenantsService],
})
export class TenantsModule {}
