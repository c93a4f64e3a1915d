import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { CliModule } from './cli/cli.module';
import { ConfigError, loadConfig } from './config/app-config';

/** `npm run --silent cli -- tenant create --name acme`: JSON on stdout, diagnostics on stderr. */
async function main(): Promise<void> {
  const config = loadConfig({ LOG_LEVEL: 'warn', ...process.env });
  await CommandFactory.run(CliModule.forRoot(config), {
    logger: ['error'],
    errorHandler: (error) => {
      process.stderr.write(`${error.stack ?? error.message}\n`);
      process.exit(1);
    },
  });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof ConfigError || !(error instanceof Error) ? String(error instanceof Error ? error.message : error) : (error.stack ?? error.message)}\n`,
  );
  process.exit(1);
});
