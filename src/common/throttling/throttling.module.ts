import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { AppConfig } from '../../config/app-config';
import { ApiKeyThrottlerGuard } from './api-key-throttler.guard';
import { PgThrottlerStorage } from './pg-throttler.storage';

@Module({ providers: [PgThrottlerStorage], exports: [PgThrottlerStorage] })
class ThrottlerStorageModule {}

/** Per-key rate limits shared through PostgreSQL; 429 problem with Retry-After past the limit. */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      imports: [ThrottlerStorageModule],
      inject: [AppConfig, PgThrottlerStorage],
      useFactory: (config: AppConfig, storage: PgThrottlerStorage) => ({
        throttlers: [{ name: 'default', ttl: 60_000, limit: config.RATE_LIMIT_PER_MINUTE }],
        storage,
        setHeaders: true,
      }),
    }),
  ],
  providers: [{ provide: APP_GUARD, useClass: ApiKeyThrottlerGuard }],
})
export class ThrottlingModule {}
