import { type AppConfig } from './config/app-config';
import { databaseTarget } from './config/config-values';
import { ConfigError } from './config/load-config';
import { EmbeddedDatabaseInUse } from './database/embedded-lock';

/** A start-up failure as the operator sees it: what went wrong, the variable to change, what to do. */
export class StartupFailure extends Error {}

type Failure = Error & { code?: string; errors?: unknown[]; cause?: unknown };

/** The error itself and whatever it wraps (AggregateError's errors, `cause`), nearest first. */
function chain(error: unknown): Failure[] {
  const seen: Failure[] = [];
  const queue: unknown[] = [error];
  while (queue.length && seen.length < 20) {
    const next = queue.shift();
    if (!(next instanceof Error) || seen.includes(next)) continue;
    const failure = next as Failure;
    seen.push(failure);
    if (Array.isArray(failure.errors)) queue.push(...failure.errors);
    if (failure.cause) queue.push(failure.cause);
  }
  return seen;
}

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * One line for a failure to start, naming the environment variable to change (DATABASE_URL,
 * ENCRYPTION_KEYS, PORT, DATA_DIR) and what to do; the stack trace only at LOG_LEVEL=debug.
 */
export function describeStartupFailure(error: unknown, config?: AppConfig): string {
  const known = describeKnownFailure(error, config);
  if (known) return known;
  const first = chain(error)[0];
  const summary = first ? first.message.split('\n')[0] : String(error);
  return `Failed to start: ${summary} (LOG_LEVEL=debug shows the details)`;
}

/**
 * The one line of a failure the operator can fix (a setting, the database's address, its credentials, a
 * port), or undefined for any other: what the server says at start, and the CLI when it opens the database.
 */
export function describeKnownFailure(error: unknown, config?: AppConfig): string | undefined {
  const errors = chain(error);
  const known = errors.find(
    (e) => e instanceof ConfigError || e instanceof StartupFailure || e instanceof EmbeddedDatabaseInUse,
  );
  if (known) return known.message;
  const target = config?.DATABASE_URL ? databaseTarget(config.DATABASE_URL) : 'the database server';
  for (const e of errors) {
    if (e.code === 'EADDRINUSE')
      return `Port ${config?.PORT ?? ''} is already in use: stop whatever listens there, or set PORT to another port.`;
    if (e.code === '3D000')
      return `PostgreSQL at ${target} has no such database (${e.message}): create it (createdb), or set DATABASE_URL to an existing database.`;
    if (e.code === '28P01' || e.code === '28000')
      return `PostgreSQL at ${target} refused the credentials (${e.message}): fix the user or password in DATABASE_URL.`;
    if (e.code && UNREACHABLE.has(e.code))
      return `Cannot reach PostgreSQL at ${target} (${e.code}): start it, or set DATABASE_URL to a server that runs.`;
  }
  return undefined;
}

/** The details of a failure, for LOG_LEVEL=debug or trace. */
export function failureDetails(error: unknown): string {
  return chain(error)
    .map((e) => e.stack ?? e.message)
    .join('\ncaused by: ');
}
