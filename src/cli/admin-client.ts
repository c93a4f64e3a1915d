import { Injectable } from '@nestjs/common';
import { createConnection } from 'node:net';
import { checkMasterKeys } from '../common/crypto/master-keys';
import { AppConfig } from '../config/app-config';
import { EmbeddedDatabaseInUse, lockOwner } from '../database/embedded-lock';
import type { AdminRequest, AdminResult } from '../modules/admin/admin-operations';
import { CliError } from './cli-error';

// Where the commands have always found it (src/cli/cli-error.ts, for cli-shares.ts without a cycle).
export { CliError };

/** How the CLI opens the key-encrypting key under KEY_PROVIDER=split. */
export interface RunOptions {
  /** A directory whose `*.txt` files each hold a share line; without it, standard input. */
  sharesFrom?: string;
}

/**
 * Runs an operator request where the database is. With DATABASE_URL, or with the embedded database
 * when no server holds it, in this process (the application context, with its database, is built only
 * now, so that `--help` starts nothing). With the embedded database held by a running server, through
 * the server's control socket, so that what the CLI creates is in the server's database at once.
 */
@Injectable()
export class AdminClient {
  constructor(private readonly config: AppConfig) {}

  /**
   * Under KEY_PROVIDER=split, an operation that needs the key-encrypting key in this process reads the
   * custodians' shares first (`unsealForCli`); through a running server, the server's keys are used.
   */
  async run(request: AdminRequest, options: RunOptions = {}): Promise<AdminResult> {
    if (this.config.embedded) {
      const owner = lockOwner(this.config.DATA_DIR);
      if (owner?.control) {
        process.stderr.write(
          `Using ${this.config.databaseDescription} through the running server (pid ${owner.pid}).\n`,
        );
        const remote = await this.remote(owner.control, request).catch((error: unknown) => {
          // The server stopped between reading the lock and connecting: run here instead.
          if (['ENOENT', 'ECONNREFUSED'].includes((error as NodeJS.ErrnoException).code ?? ''))
            return undefined;
          throw error;
        });
        if (remote) return remote;
      } else if (owner) throw new CliError(new EmbeddedDatabaseInUse(owner, this.config.DATA_DIR).message);
    }
    // Before the database is opened (and migrated): missing master keys are one line, and change nothing.
    checkMasterKeys(this.config);
    process.stderr.write(`Using ${this.config.databaseDescription}.\n`);
    return this.local(request, options);
  }

  private async local(request: AdminRequest, options: RunOptions): Promise<AdminResult> {
    // Loaded here, not at the top: the modules behind it (database, crypto, services) are what makes a
    // command slow to start, and `--help` needs none of them.
    const [{ NestFactory }, { CliCoreModule }, { AdminOperations, AdminRefusal }, { unsealForCli }] =
      await Promise.all([
        import('@nestjs/core'),
        import('./cli-core.module'),
        import('../modules/admin/admin-operations'),
        import('./cli-shares'),
      ]);
    let context;
    try {
      context = await NestFactory.createApplicationContext(CliCoreModule.forRoot(this.config), {
        logger: ['error'],
        // A context that fails to start is reported once, by the CLI (src/cli.ts): not Nest's stack trace too.
        bufferLogs: true,
        autoFlushLogs: false,
        abortOnError: false,
      });
      context.flushLogs();
    } catch (error) {
      if (error instanceof EmbeddedDatabaseInUse) throw new CliError(error.message);
      throw error;
    }
    try {
      await unsealForCli(context, request.op, options.sharesFrom);
      // A long operation's progress (a rotation's batches) on standard error, one line each.
      return await context.get(AdminOperations).run(request, (line) => process.stderr.write(`${line}\n`));
    } catch (error) {
      if (error instanceof AdminRefusal) throw new CliError(error.message);
      throw error;
    } finally {
      await context.close();
    }
  }

  private remote(path: string, request: AdminRequest): Promise<AdminResult> {
    return new Promise((resolve, reject) => {
      const socket = createConnection(path);
      let reply = '';
      socket.setEncoding('utf8');
      socket.once('error', reject);
      socket.on('data', (chunk: string) => (reply += chunk));
      socket.once('connect', () => socket.write(`${JSON.stringify(request)}\n`));
      socket.once('end', () => {
        try {
          const answer = JSON.parse(reply) as
            { ok: true; result: AdminResult } | { ok: false; error: string };
          if (answer.ok) resolve(answer.result);
          else reject(new CliError(`The running server refused the request: ${answer.error}`));
        } catch {
          reject(new CliError('The running server gave no answer to the request.'));
        }
      });
    });
  }
}
