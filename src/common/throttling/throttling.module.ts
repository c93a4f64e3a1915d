import { Global, Module, OnModuleInit } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { AppConfig } from '../../config/app-config';
import { LOCK_KEYS } from '../../database/data-source';
import { DatabaseModule } from '../../database/database.module';
import { RetentionJob } from '../jobs/retention.job';
import { ApiKeyThrottlerGuard } from './api-key-throttler.guard';
import { RateLimitEntity } from './entities/rate-limit.entity';
import { PgThrottlerStorage } from './pg-throttler.storage';
import { RateLimiter } from './rate-limiter';
import { RateLimitsRepository } from './rate-limits.repository';

/**
 * The shared counters. Their retention is registered here rather than by the storage, whose
 * `onModuleInit` Nest calls twice (the throttler module provides the same instance again as its storage).
 */
@Module({
  imports: [DatabaseModule.forFeature([RateLimitEntity])],
  providers: [RateLimitsRepository, PgThrottlerStorage],
  exports: [PgThrottlerStorage],
})
class ThrottlerStorageModule implements OnModuleInit {
  constructor(
    private readonly retention: RetentionJob,
    private readonly counters: RateLimitsRepository,
  ) {}

  /** Windows that ended more than an hour ago are deleted every 10 minutes. */
  onModuleInit(): void {
    this.retention.register({
      name: 'rate-limits',
      lockKey: LOCK_KEYS.jobRateLimits,
      periodMs: 600_000,
      purge: (change, now) => this.counters.deleteStartedBefore(change, new Date(now.getTime() - 3_600_000)),
    });
  }
}

/**
 * Per-key rate limits shared through PostgreSQL; 429 problem with Retry-After past the limit. Global, so
 * that a handler counting a key only it can recognise (the anonymous proxy) gets the RateLimiter. The
 * guard is registered as a global guard by the root module (`globalEnhancers` in app.module.ts).
 */
@Global()
@Module({
  imports: [
    ThrottlerStorageModule,
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
  providers: [ApiKeyThrottlerGuard, RateLimiter],
  exports: [ApiKeyThrottlerGuard, RateLimiter],
})
export class ThrottlingModule {}
