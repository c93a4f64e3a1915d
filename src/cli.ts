import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { CliError } from './cli/admin-client';
import { CliModule } from './cli/cli.module';
import { ConfigError, loadConfig } from './config/app-config';

/** Commander's own exits (help shown, a missing option): it has printed what it had to say. */
const isCommanderExit = (error: unknown): error is { exitCode: number } =>
  typeof (error as { code?: unknown })?.code === 'string' &&
  (error as { code: string }).code.startsWith('commander.') &&
  typeof (error as { exitCode?: unknown }).exitCode === 'number';

/** What the operator sees of a failure: one line for the expected ones, the stack for the others. */
function report(error: unknown): never {
  if (isCommanderExit(error)) process.exit(error.exitCode);
  if (!(error instanceof Error)) process.stderr.write(`${String(error)}\n`);
  else if (error instanceof ConfigError || error instanceof CliError)
    process.stderr.write(`${error.message}\n`);
  else process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
}

/** `npm run --silent cli -- tenant create --name acme`: JSON on stdout, diagnostics on stderr. */
async function main(): Promise<void> {
  const config = loadConfig({ LOG_LEVEL: 'warn', ...process.env });
  config.role = 'cli';
  await CommandFactory.run(CliModule.forRoot(config), {
    logger: ['error'],
    errorHandler: report,
    serviceErrorHandler: report,
  });
}

main().catch(report);
