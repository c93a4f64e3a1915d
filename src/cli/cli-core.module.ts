import { DynamicModule, Module } from '@nestjs/common';
import pino from 'pino';
import { coreImports } from '../app.module';
import { AppConfig } from '../config/app-config';
import { AdminModule } from '../modules/admin/admin.module';

/** What a CLI command runs with: the server's config, database and services; logs on stderr. */
@Module({})
export class CliCoreModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CliCoreModule,
      imports: [
        ...(coreImports(config, { logStream: pino.destination(2) }) ?? []),
        AdminModule.forRoot({ controlSocket: false, heartbeat: false }),
      ],
    };
  }
}
