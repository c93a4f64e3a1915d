import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { EmbeddedLock, LockOwner } from './embedded-lock';

/**
 * The embedded default: PGlite (PostgreSQL compiled to WebAssembly) persisted under DATA_DIR and served
 * on a private Unix socket, so that the application reaches it through the same `pg` driver as a real
 * server. PGlite runs one backend; the pool in front of it holds a single connection, so a transaction
 * owns the connection from BEGIN to COMMIT and concurrent requests queue instead of interleaving.
 */
export class EmbeddedPostgres {
  private constructor(
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    private readonly socketDir: string,
    /** This process's exclusive hold on DATA_DIR (see embedded-lock.ts). */
    readonly lock: EmbeddedLock,
  ) {}

  /** Directory holding the socket file, usable as the `host` of a `pg` connection. */
  get host(): string {
    return this.socketDir;
  }

  readonly port = 5432;

  /** Opens DATA_DIR's database; throws EmbeddedDatabaseInUse when another live process has it open. */
  static async start(dataDir: string, role: LockOwner['role'] = 'server'): Promise<EmbeddedPostgres> {
    const pgdata = join(resolve(dataDir), 'pgdata');
    mkdirSync(pgdata, { recursive: true, mode: 0o700 });
    const lock = EmbeddedLock.acquire(dataDir, role);
    try {
      const db = await PGlite.create({ dataDir: pgdata });
      // Unix socket paths are limited to about 100 bytes, so the socket lives in a short private temp dir.
      const socketDir = mkdtempSync(join(tmpdir(), 'vault-pg-'));
      const server = new PGLiteSocketServer({
        db,
        path: join(socketDir, '.s.PGSQL.5432'),
        maxConnections: 1,
      });
      await server.start();
      return new EmbeddedPostgres(db, server, socketDir, lock);
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    rmSync(this.socketDir, { recursive: true, force: true });
    this.lock.release();
  }
}
