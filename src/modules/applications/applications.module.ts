import { Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { ApplicationKeyResolver } from './application-key.resolver';
import { ApplicationsController } from './applications.controller';
import { ApplicationsRepository } from './applications.repository';
import { ApplicationsService } from './applications.service';
import { ApiKeyEntity } from './entities/api-key.entity';
import { ApplicationEntity } from './entities/application.entity';
import { PermissionsController } from './permissions.controller';

@Module({
  imports: [DatabaseModule.forFeature([ApplicationEntity, ApiKeyEntity])],
  controllers: [ApplicationsController, PermissionsController],
  providers: [ApplicationsRepository, ApplicationsService, ApplicationKeyResolver],
  exports: [ApplicationsService],
})
export class ApplicationsModule {}
