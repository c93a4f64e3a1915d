import { DynamicModule, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { AdminClient } from './admin-client';
import { KeysCeremonyCommand, KeysCommand, KeysRotateCommand, KeysStatusCommand } from './keys.command';
import { UnsealCommand } from './unseal.command';
import { LogsCommand, LogsVerifyCommand } from './logs.command';
import { TenantCommand, TenantCreateCommand } from './tenant.command';

/**
 * The command-line application: commands only. Nothing here opens the database; a command that needs
 * it builds the application context when it runs (AdminClient), so that `--help` answers at once.
 */
@Module({})
export class CliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CliModule,
      providers: [
        { provide: AppConfig, useValue: config },
        AdminClient,
        TenantCommand,
        TenantCreateCommand,
        KeysCommand,
        KeysRotateCommand,
        KeysCeremonyCommand,
        KeysStatusCommand,
        UnsealCommand,
        LogsCommand,
        LogsVerifyCommand,
      ],
    };
  }
}
