import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { openDatabase } from './data-source';

/**
 * Provides the one DataSource of the process (embedded PGlite, or DATABASE_URL), opened and migrated
 * under an advisory lock before anything else starts; destroyed last on shutdown.
 */
@Global()
@Module({
  providers: [
    { provide: DataSource, inject: [AppConfig], useFactory: (config: AppConfig) => openDatabase(config) },
  ],
  exports: [DataSource],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    await this.dataSource.destroy();
  }
}
