import { Command, CommandRunner, SubCommand } from 'nest-commander';
import { AdminClient } from './admin-client';

@SubCommand({
  name: 'rotate',
  description: 'Re-wrap every tenant data key under the active (last) master key',
})
export class KeysRotateCommand extends CommandRunner {
  constructor(private readonly admin: AdminClient) {
    super();
  }

  async run(): Promise<void> {
    process.stdout.write(`${JSON.stringify(await this.admin.run({ op: 'keys.rotate' }))}\n`);
  }
}

@Command({ name: 'keys', description: 'Manage encryption keys', subCommands: [KeysRotateCommand] })
export class KeysCommand extends CommandRunner {
  async run(): Promise<void> {
    this.command.help();
  }
}
