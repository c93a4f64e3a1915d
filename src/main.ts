import 'reflect-metadata';
import { createServer } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { createApp } from './app.setup';
import { stdoutStream } from './common/context/logging';
import { ConfigError, loadConfig } from './config/app-config';
import { BootstrapService } from './modules/tenants/bootstrap.service';

/** True when something already listens on `port` (checked before anything starts, so nothing is half-made). */
function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
    probe.listen(port, () => probe.close(() => resolve(false)));
  });
}

const portTaken = (port: number): string =>
  `Port ${port} is already in use: stop whatever listens there, or set PORT to another port.\n`;

async function main(): Promise<void> {
  const config = loadConfig();
  // Read by V8 at every full collection, so it applies from here on (docs/benchmarks.md measures it).
  if (config.HEAP_GROWTH_PERCENT > 0)
    setFlagsFromString(`--heap-growing-percent=${config.HEAP_GROWTH_PERCENT}`);
  if (config.PORT !== 0 && (await portInUse(config.PORT))) {
    process.stderr.write(portTaken(config.PORT));
    process.exit(1);
  }
  const app = await createApp(config);
  const bootstrap = app.get(BootstrapService);
  try {
    await app.listen(config.PORT);
  } catch (error) {
    // Taken between the check and now: still show the key of a tenant this start created.
    bootstrap.printBanner();
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    process.stderr.write(portTaken(config.PORT));
    process.exit(1);
  }
  // Through the loggers' own stream: after every log line of the start-up, the banner last.
  const out = stdoutStream();
  out.write(`listening on ${config.publicBaseUrl}\n`);
  bootstrap.printBanner((text) => out.write(text));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(
      `Failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
