import { Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module';
import { IdempotencyRecordEntity } from './entities/idempotency-record.entity';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyRepository } from './idempotency.repository';
import { IdempotencyService } from './idempotency.service';

@Module({
  imports: [DatabaseModule.forFeature([IdempotencyRecordEntity])],
  providers: [IdempotencyRepository, IdempotencyService, IdempotencyInterceptor],
  exports: [IdempotencyInterceptor],
})
export class IdempotencyModule {}
