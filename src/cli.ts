import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { CliError } from './cli/admin-client';
import { CliModule } from './cli/cli.module';
import { AppConfig } from './config/app-config';
import { loadConfig } from './config/load-config';
import { misspelledVariables } from './config/misspelled-variables';
import { describeKnownFailure } from './startup-failure';

type RunOptions = Extract<Parameters<typeof CommandFactory.run>[1], { helpConfiguration?: unknown }>;
type Help = NonNullable<RunOptions['helpConfiguration']>;
type HelpCommand = Parameters<NonNullable<Help['visibleCommands']>>[0];

/**
 * `--help` lists every command with its subcommands (`tenant create`, `keys rotate`), not only the
 * groups: a new user sees at once what the CLI can do.
 */
const helpWithSubcommands: Help = {
  visibleCommands(this: Required<Help>, cmd: HelpCommand): HelpCommand[] {
    const standard = Object.getPrototypeOf(this) as Required<Help>;
    const visible = standard.visibleCommands.call(this, cmd);
    if (cmd.parent) return visible;
    return visible.flatMap((group) => [
      group,
      ...standard.visibleCommands.call(this, group).filter((sub) => sub.name() !== 'help'),
    ]);
  },
  subcommandTerm(this: Required<Help>, cmd: HelpCommand): string {
    const term = (Object.getPrototypeOf(this) as Required<Help>).subcommandTerm.call(this, cmd);
    return cmd.parent?.parent ? `${cmd.parent.name()} ${term}` : term;
  },
};

/** Commander's own exits (help shown, a missing option): it has printed what it had to say. */
const isCommanderExit = (error: unknown): error is { exitCode: number } =>
  typeof (error as { code?: unknown })?.code === 'string' &&
  (error as { code: string }).code.startsWith('commander.') &&
  typeof (error as { exitCode?: unknown }).exitCode === 'number';

let config: AppConfig | undefined;

/**
 * What the operator sees of a failure: one line for the expected ones (a refusal, a setting to change, a
 * database that cannot be reached or refuses the credentials), the stack for the others.
 */
function report(error: unknown): never {
  if (isCommanderExit(error)) process.exit(error.exitCode);
  const known = error instanceof CliError ? error.message : describeKnownFailure(error, config);
  if (!(error instanceof Error)) process.stderr.write(`${String(error)}\n`);
  else if (known) process.stderr.write(`${known}\n`);
  else process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
}

/** `npm run --silent cli -- tenant create --name acme`: JSON on stdout, diagnostics on stderr. */
async function main(): Promise<void> {
  for (const warning of misspelledVariables(process.env)) process.stderr.write(`${warning}\n`);
  config = loadConfig({ LOG_LEVEL: 'warn', ...process.env });
  config.role = 'cli';
  await CommandFactory.run(CliModule.forRoot(config), {
    logger: ['error'],
    errorHandler: report,
    serviceErrorHandler: report,
    helpConfiguration: helpWithSubcommands,
  });
}

main().catch(report);
