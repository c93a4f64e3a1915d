import { Command, CommandRunner, SubCommand } from 'nest-commander';
import { AppConfig } from '../config/app-config';
import { AdminClient } from './admin-client';

@SubCommand({
  name: 'rotate',
  description:
    'Re-wrap every tenant data key under the active (last) master key; refused while a running server lacks it',
})
export class KeysRotateCommand extends CommandRunner {
  constructor(
    private readonly admin: AdminClient,
    private readonly config: AppConfig,
  ) {
    super();
  }

  async run(): Promise<void> {
    // With the embedded database and a server running, the server rotates under its own keys: it
    // refuses when they are not the ones this command was given.
    const request = { op: 'keys.rotate' as const, active: this.config.activeKeyVersion };
    process.stdout.write(`${JSON.stringify(await this.admin.run(request))}\n`);
  }
}

@Command({ name: 'keys', description: 'Manage encryption keys', subCommands: [KeysRotateCommand] })
export class KeysCommand extends CommandRunner {
  async run(): Promise<void> {
    this.command.help();
  }
}
