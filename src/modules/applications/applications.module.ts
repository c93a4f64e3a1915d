import { Module } from '@nestjs/common';
import { ApplicationKeyResolver } from './application-key.resolver';
import { ApplicationsController } from './applications.controller';
import { ApplicationsService } from './applications.service';
import { PermissionsController } from './permissions.controller';

@Module({
  controllers: [ApplicationsController, PermissionsController],
  providers: [ApplicationsService, ApplicationKeyResolver],
  exports: [ApplicationsService],
})
export class ApplicationsModule {}
