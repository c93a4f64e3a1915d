import { ClsService } from 'nestjs-cls';
import { Command, CommandRunner, SubCommand } from 'nest-commander';
import { TenantKeysService } from '../common/crypto/tenant-keys.service';

@SubCommand({
  name: 'rotate',
  description: 'Re-wrap every tenant data key under the active (last) master key',
})
export class KeysRotateCommand extends CommandRunner {
  constructor(
    private readonly tenantKeys: TenantKeysService,
    private readonly cls: ClsService,
  ) {
    super();
  }

  async run(): Promise<void> {
    const result = await this.cls.run(() => this.tenantKeys.rotate());
    process.stdout.write(
      `${JSON.stringify({ active_version: result.active, rewrapped_tenants: result.rewrapped })}\n`,
    );
  }
}

@Command({ name: 'keys', description: 'Manage encryption keys', subCommands: [KeysRotateCommand] })
export class KeysCommand extends CommandRunner {
  async run(): Promise<void> {
    this.command.help();
  }
}
