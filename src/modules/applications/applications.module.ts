import { Module } from '@nestjs/common';
import { ApplicationKeyResolver } from './application-key.resolver';
import { ApplicationsController } from './applications.controller';
import { ApplicationsRepository } from './applications.repository';
import { ApplicationsService } from './applications.service';
import { PermissionsController } from './permissions.controller';

@Module({
  controllers: [ApplicationsController, PermissionsController],
  providers: [ApplicationsRepository, ApplicationsService, ApplicationKeyResolver],
  exports: [ApplicationsService],
})
export class ApplicationsModule {}
