import { DynamicModule, Module } from '@nestjs/common';
import pino from 'pino';
import { coreImports } from '../app.module';
import { AppConfig } from '../config/app-config';
import { TenantsModule } from '../modules/tenants/tenants.module';
import { KeysCommand, KeysRotateCommand } from './keys.command';
import { LogsCommand, LogsVerifyCommand } from './logs.command';
import { TenantCommand, TenantCreateCommand } from './tenant.command';

/** The command-line application: same config, database and services as the server; logs on stderr. */
@Module({})
export class CliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CliModule,
      imports: [...(coreImports(config, { logStream: pino.destination(2) }) ?? []), TenantsModule],
      providers: [
        TenantCommand,
        TenantCreateCommand,
        KeysCommand,
        KeysRotateCommand,
        LogsCommand,
        LogsVerifyCommand,
      ],
    };
  }
}
