import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { readFileSync } from 'node:fs';
import type { AuditReport } from '../common/audit/audit-verifier.service';
import type { SystemLogLine } from '../common/audit/system-log';
import { AdminClient } from './admin-client';
import { SHARES_FROM } from './shares-option';

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

  @Option(SHARES_FROM)
  parseSharesFrom(value: string): string {
    return value;
  }

  async run(
    _args: string[],
    options: { tenant?: string; seal?: boolean; checkpoint?: string; sharesFrom?: string },
  ): Promise<void> {
    const report = (await this.admin.run(
      {
        op: 'logs.verify',
        tenant: options.tenant,
        seal: options.seal !== false,
        ...(options.checkpoint !== undefined ? { checkpoint: readFileSync(options.checkpoint, 'utf8') } : {}),
      },
      { sharesFrom: options.sharesFrom },
    )) as AuditReport;
    process.stdout.write(`${JSON.stringify(report)}\n`);
    if (report.problems.length) process.exitCode = 1;
  }
}

@Command({ name: 'logs', description: 'Audit log tools', subCommands: [LogsVerifyCommand] })
export class LogsCommand extends CommandRunner {
  constructor(private readonly admin: AdminClient) {
    super();
  }

  @Option({
    flags: '--system',
    description:
      "Print the system tenant's log (every use of the key-encrypting keys: ceremonies, unseals, rotations, the HSM's failures) as JSON lines, oldest first",
  })
  parseSystem(): boolean {
    return true;
  }

  async run(_args: string[], options: { system?: boolean } = {}): Promise<void> {
    if (!options.system) return this.command.help();
    const lines = (await this.admin.run({ op: 'logs.system' })) as SystemLogLine[];
    process.stdout.write(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  }
}
