import 'reflect-metadata';
import { createServer } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { createApp } from './app.setup';
import { stdoutStream } from './common/context/logging';
import { GracefulShutdown } from './common/lifecycle/graceful-shutdown';
import { ShutdownState } from './common/lifecycle/shutdown-state';
import { checkMasterKeys } from './common/crypto/master-keys';
import { AppConfig } from './config/app-config';
import { loadConfig } from './config/load-config';
import { misspelledVariables } from './config/misspelled-variables';
import { BootstrapService } from './modules/tenants/bootstrap.service';
import { describeStartupFailure, failureDetails, StartupFailure } from './startup-failure';

/** True when something already listens on `port` (checked before anything starts, so nothing is half-made). */
function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
    probe.listen(port, () => probe.close(() => resolve(false)));
  });
}

const portTaken = (port: number): StartupFailure =>
  new StartupFailure(
    `Port ${port} is already in use: stop whatever listens there, or set PORT to another port.`,
  );

let config: AppConfig | undefined;

async function main(): Promise<void> {
  for (const warning of misspelledVariables(process.env)) process.stderr.write(`${warning}\n`);
  config = loadConfig();
  // Before anything opens the database: a refusal for want of master keys runs no migration.
  checkMasterKeys(config);
  // Read by V8 at every full collection, so it applies from here on (docs/benchmarks.md measures it).
  if (config.HEAP_GROWTH_PERCENT > 0)
    setFlagsFromString(`--heap-growing-percent=${config.HEAP_GROWTH_PERCENT}`);
  if (config.PORT !== 0 && (await portInUse(config.PORT))) throw portTaken(config.PORT);
  const app = await createApp(config);
  const bootstrap = app.get(BootstrapService);
  const out = stdoutStream();
  // Counts the requests from the first one on; the signals are heard once the server listens.
  const shutdown = new GracefulShutdown({
    server: app.getHttpServer(),
    state: app.get(ShutdownState),
    graceMs: config.SHUTDOWN_GRACE_MS,
    drainDelayMs: config.SHUTDOWN_DRAIN_DELAY_MS,
    close: () => app.close(),
    log: (line) => out.write(`${line}\n`),
  });
  try {
    await app.listen(config.PORT);
  } catch (error) {
    // Taken between the check and now: still show the key of a tenant this start created.
    bootstrap.printBanner();
    await app.close().catch(() => undefined);
    throw (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? portTaken(config.PORT) : error;
  }
  shutdown.listen((code) => {
    (out as { flushSync?: () => void }).flushSync?.();
    process.exit(code);
  });
  // Through the loggers' own stream: after every log line of the start-up, the banner last.
  out.write(`listening on ${config.publicBaseUrl}\n`);
  bootstrap.printBanner((text) => out.write(text));
  // Lines are gathered in blocks (logging.ts): the start-up lines go out now, before the first request
  // is answered, as they did when every line was written at once.
  (out as { flush?: () => void }).flush?.();
}

main().catch((error: unknown) => {
  process.stderr.write(`${describeStartupFailure(error, config)}\n`);
  if (config?.LOG_LEVEL === 'debug' || config?.LOG_LEVEL === 'trace')
    process.stderr.write(`${failureDetails(error)}\n`);
  process.exit(1);
});
