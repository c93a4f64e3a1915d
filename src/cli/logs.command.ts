import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { readFileSync } from 'node:fs';
import type { AuditReport } from '../common/audit/audit-verifier.service';
import { AdminClient } from './admin-client';

@SubCommand({
  name: 'verify',
  description:
    "Recompute every tenant's audit tree from its rows, check every checkpoint (and a kept one); prints a JSON report, exits 1 on any problem",
})
export class LogsVerifyCommand extends CommandRunner {
  constructor(private readonly admin: AdminClient) {
    super();
  }

  @Option({ flags: '--tenant <id>', description: 'Only this tenant' })
  parseTenant(value: string): string {
    return value;
  }

  @Option({
    flags: '--checkpoint <file>',
    description: 'A signed checkpoint note kept earlier: the log must still hold the tree it signed',
  })
  parseCheckpoint(value: string): string {
    return value;
  }

  @Option({ flags: '--no-seal', description: 'Do not append and checkpoint recent rows first' })
  parseSeal(): boolean {
    return false;
  }

  async run(
    _args: string[],
    options: { tenant?: string; seal?: boolean; checkpoint?: string },
  ): Promise<void> {
    const report = (await this.admin.run({
      op: 'logs.verify',
      tenant: options.tenant,
      seal: options.seal !== false,
      ...(options.checkpoint !== undefined ? { checkpoint: readFileSync(options.checkpoint, 'utf8') } : {}),
    })) as AuditReport;
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
