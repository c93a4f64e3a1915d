import 'reflect-metadata';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { createApp } from './app.setup';
import { stdoutStream } from './common/context/logging';
import { AppConfig, loadConfig } from './config/app-config';
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
  // Read by V8 at every full collection, so it applies from here on (docs/benchmarks.md measures it).
  if (config.HEAP_GROWTH_PERCENT > 0)
    setFlagsFromString(`--heap-growing-percent=${config.HEAP_GROWTH_PERCENT}`);
  if (config.PORT !== 0 && (await portInUse(config.PORT))) throw portTaken(config.PORT);
  const app = await createApp(config);
  const bootstrap = app.get(BootstrapService);
  try {
    await app.listen(config.PORT);
  } catch (error) {
    // Taken between the check and now: still show the key of a tenant this start created.
    bootstrap.printBanner();
    await app.close().catch(() => undefined);
    throw (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? portTaken(config.PORT) : error;
  }
  stopOnSignals(app, config);
  // Through the loggers' own stream: after every log line of the start-up, the banner last.
  const out = stdoutStream();
  out.write(`listening on ${config.publicBaseUrl}\n`);
  bootstrap.printBanner((text) => out.write(text));
}

/**
 * SIGINT (Ctrl-C) and SIGTERM: one line, no new connections, the requests in flight (a slow proxy
 * request too) finish within SHUTDOWN_GRACE_MS, then the application closes (jobs, database, the
 * embedded lock) and the process exits 0. A second signal cuts what is still running.
 */
function stopOnSignals(app: NestExpressApplication, settings: AppConfig): void {
  const server: Server = app.getHttpServer();
  let inFlight = 0;
  let stopping = false;
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    inFlight++;
    // A keep-alive client learns that this connection ends with its answer.
    if (stopping) res.setHeader('Connection', 'close');
    res.once('close', () => inFlight--);
  });
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (stopping) {
      server.closeAllConnections();
      return;
    }
    stopping = true;
    const out = stdoutStream();
    out.write(
      `${signal}: stopping; ${inFlight} request(s) in flight get up to ${settings.SHUTDOWN_GRACE_MS} ms to finish\n`,
    );
    await new Promise<void>((resolve) => {
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      const cut = setTimeout(() => server.closeAllConnections(), settings.SHUTDOWN_GRACE_MS);
      server.close(() => {
        clearInterval(idle);
        clearTimeout(cut);
        resolve();
      });
      server.closeIdleConnections();
    });
    let code = 0;
    await app.close().catch((error: unknown) => {
      process.stderr.write(`${describeStartupFailure(error, settings)}\n`);
      code = 1;
    });
    (out as { flushSync?: () => void }).flushSync?.();
    process.exit(code);
  };
  process.on('SIGINT', (signal) => void stop(signal));
  process.on('SIGTERM', (signal) => void stop(signal));
}

main().catch((error: unknown) => {
  process.stderr.write(`${describeStartupFailure(error, config)}\n`);
  if (config?.LOG_LEVEL === 'debug' || config?.LOG_LEVEL === 'trace')
    process.stderr.write(`${failureDetails(error)}\n`);
  process.exit(1);
});
