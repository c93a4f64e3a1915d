import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const LOCK_FILE_NAME = 'embedded.lock';

/** Who holds the embedded database: written into DATA_DIR/embedded.lock (mode 0600). */
export interface LockOwner {
  pid: number;
  role: 'server' | 'cli';
  /** The server's control socket (the CLI sends its commands there while the server runs). */
  control?: string;
  since: string;
}

/** The embedded database of DATA_DIR is open in another live process. */
export class EmbeddedDatabaseInUse extends Error {
  constructor(
    readonly owner: LockOwner,
    dataDir: string,
  ) {
    super(
      `The embedded database in ${resolve(dataDir)} is in use by ${owner.role === 'server' ? 'a running server' : 'another command'} (pid ${owner.pid}). ` +
        'PGlite can be opened by one process at a time: stop that process, or set DATABASE_URL to use a PostgreSQL server that both can reach.',
    );
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The live holder of DATA_DIR's embedded database, if any (a lock left by a dead process is ignored). */
export function lockOwner(dataDir: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(join(resolve(dataDir), LOCK_FILE_NAME), 'utf8')) as LockOwner;
    return Number.isInteger(owner.pid) && owner.pid !== process.pid && alive(owner.pid) ? owner : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An exclusive hold on DATA_DIR's embedded database for this process: the lock file is created with
 * O_EXCL, so two processes starting together cannot both get it; a lock whose process has died is taken
 * over. PGlite itself does not guard its directory, and two processes writing it lose each other's work.
 */
export class EmbeddedLock {
  private constructor(
    private readonly file: string,
    private owner: LockOwner,
  ) {}

  static acquire(dataDir: string, role: LockOwner['role']): EmbeddedLock {
    const file = join(resolve(dataDir), LOCK_FILE_NAME);
    const owner: LockOwner = { pid: process.pid, role, since: new Date().toISOString() };
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(file, 'wx', 0o600);
        writeFileSync(fd, JSON.stringify(owner));
        closeSync(fd);
        return new EmbeddedLock(file, owner);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const holder = lockOwner(dataDir);
        if (holder) throw new EmbeddedDatabaseInUse(holder, dataDir);
        // Left by a process that is gone (or by this one): take it over.
        rmSync(file, { force: true });
      }
    }
    throw new Error(`could not take the lock ${file}`);
  }

  /** Publishes the control socket of the server holding the lock. */
  setControl(path: string | undefined): void {
    this.owner = { ...this.owner, control: path };
    if (this.held()) writeFileSync(this.file, JSON.stringify(this.owner), { mode: 0o600 });
  }

  private held(): boolean {
    try {
      return (JSON.parse(readFileSync(this.file, 'utf8')) as LockOwner).pid === process.pid;
    } catch {
      return false;
    }
  }

  release(): void {
    if (this.held()) rmSync(this.file, { force: true });
  }
}
