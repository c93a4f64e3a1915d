import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import type { ChainReport } from '../common/audit/audit-chain.service';
import { AdminClient } from './admin-client';

@SubCommand({
  name: 'verify',
  description: "Check every tenant's audit log hash chain; prints a JSON report, exits 1 on a broken chain",
})
export class LogsVerifyCommand extends CommandRunner {
  constructor(private readonly admin: AdminClient) {
    super();
  }

  @Option({ flags: '--tenant <id>', description: 'Only this tenant' })
  parseTenant(value: string): string {
    return value;
  }

  @Option({ flags: '--no-seal', description: 'Do not seal recent rows first' })
  parseSeal(): boolean {
    return false;
  }

  async run(_args: string[], options: { tenant?: string; seal?: boolean }): Promise<void> {
    const report = (await this.admin.run({
      op: 'logs.verify',
      tenant: options.tenant,
      seal: options.seal !== false,
    })) as ChainReport;
    process.stdout.write(`${JSON.stringify(report)}\n`);
    if (report.problems.length) process.exitCode = 1;
  }
}

@Command({ name: 'logs', description: 'Audit log tools', subCommands: [LogsVerifyCommand] })
export class LogsCommand extends CommandRunner {
  async run(): Promise<void> {
    this.command.help();
  }
}
