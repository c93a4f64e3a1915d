import { Module } from '@nestjs/common';
import { DatabaseModule } from '../../../database/database.module';
import { DataKeyRotationEntity } from '../entities/data-key-rotation.entity';
import { DataKeyRotation } from './data-key-rotation.service';
import { DataKeyRotationRepository } from './data-key-rotation.repository';

/** Tenants' data keys rotated and tokens sealed again (`vault keys rotate --tenant-keys`), for the operator's CLI. */
@Module({
  imports: [DatabaseModule.forFeature([DataKeyRotationEntity])],
  providers: [DataKeyRotation, DataKeyRotationRepository],
  exports: [DataKeyRotation],
})
export class DataKeyRotationModule {}
