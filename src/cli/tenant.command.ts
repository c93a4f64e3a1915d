import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { AdminClient } from './admin-client';
import { SHARES_FROM } from './shares-option';

interface CreateOptions {
  name: string;
  sharesFrom?: string;
}

@SubCommand({
  name: 'create',
  description: 'Create a tenant with a management application; prints its key as JSON',
})
export class TenantCreateCommand extends CommandRunner {
  constructor(private readonly admin: AdminClient) {
    super();
  }

  @Option({ flags: '--name <name>', description: 'Tenant name (1 to 200 characters)', required: true })
  parseName(value: string): string {
    const name = value.trim();
    if (name.length < 1 || name.length > 200) throw new Error('--name must be 1 to 200 characters');
    return name;
  }

  @Option(SHARES_FROM)
  parseSharesFrom(value: string): string {
    return value;
  }

  async run(_params: string[], options: CreateOptions): Promise<void> {
    const created = await this.admin.run(
      { op: 'tenant.create', name: options.name },
      { sharesFrom: options.sharesFrom },
    );
    process.stdout.write(`${JSON.stringify(created)}\n`);
  }
}

@Command({ name: 'tenant', description: 'Manage tenants', subCommands: [TenantCreateCommand] })
export class TenantCommand extends CommandRunner {
  async run(): Promise<void> {
    this.command.help();
  }
}
