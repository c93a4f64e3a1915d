import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort, ROOT } from '../support/processes';
import { waitFor } from '../support/wait';

/** Every process below `pid`, from `ps` (children, their children, ...). */
function descendants(pid: number): number[] {
  const rows = spawnSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .stdout.trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number));
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of rows)
      if (ppid === parent) {
        found.push(child);
        walk(child);
      }
  };
  walk(pid);
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** `npm run <script>` as an operator's supervisor starts it; its output kept. */
function npm(args: string[], env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn('npm', args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

/**
 * SIGTERM to npm's own process (what a supervisor, `kill` or `timeout` sends) stops the whole tree, as
 * Ctrl-C does: npm passes the signal to its script, which is the service's process itself (`exec`), not a
 * shell that would die and leave it running.
 */
describe('SIGTERM to npm', () => {
  it.each([
    [
      'npm run cluster: the instances, HAProxy and PgBouncer stop, the database is dropped, the folder removed',
      [],
    ],
    [
      'npm run cluster -- --ha: etcd, both Patroni and their PostgreSQL stop too, the folder removed',
      ['--ha'],
    ],
  ])('%s', async (_, flags: string[]) => {
    const port = await freePort();
    const run = npm(['run', 'cluster', '--', ...flags, '--port', String(port)], {});
    let tree: number[] = [];
    try {
      await waitFor(() => run.output().includes('stops everything'), {
        timeoutMs: 180_000,
        intervalMs: 200,
        what: `the cluster to start:\n${run.output()}`,
      });
      tree = descendants(run.child.pid!);
      const database = /(?:postgresql|database haproxy)\s+\S+\/(vault_cluster_\w+)/.exec(run.output())?.[1];
      const dir = /logs\s+(\S+)/.exec(run.output())?.[1];
      expect(database).toBeTruthy();
      expect(dir && existsSync(dir)).toBe(true);
      // node (the cluster), PgBouncer, two instances, HAProxy; with --ha also etcd, the database's HAProxy
      // and two Patroni, whose PostgreSQL run detached from them (found by their data directories).
      expect(tree.length).toBeGreaterThanOrEqual(flags.length ? 9 : 5);
      const ofTheRun = () => spawnSync('pgrep', ['-f', dir!], { encoding: 'utf8' }).stdout.trim();
      if (flags.length) expect(ofTheRun()).not.toBe('');
      expect((await fetch(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200);

      run.child.kill('SIGTERM');
      await waitFor(() => tree.every((pid) => !alive(pid)), {
        timeoutMs: 60_000,
        intervalMs: 200,
        what: 'every process of the cluster to exit',
      });
      expect(existsSync(dir!)).toBe(false);
      // Nothing of the run left anywhere (a PostgreSQL outlives a Patroni that did not stop it).
      expect(ofTheRun()).toBe('');
      if (!flags.length) {
        const db = new Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
        await db.connect();
        try {
          const left = await db.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
          expect(left.rowCount).toBe(0);
        } finally {
          await db.end();
        }
      }
      expect(run.output()).toContain('Stopping...');
    } finally {
      // What a failure left running (orphans are no longer below npm): SIGTERM, so the cluster cleans up.
      for (const pid of [...tree, ...descendants(run.child.pid!)])
        if (alive(pid)) process.kill(pid, 'SIGTERM');
      run.child.kill('SIGKILL');
    }
  });

  it('npm start: the server stops and frees its port', async () => {
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), 'vault-npm-start-'));
    const run = npm(['start'], {
      PORT: String(port),
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      LOG_LEVEL: 'warn',
    });
    let tree: number[] = [];
    try {
      await waitFor(
        () =>
          fetch(`http://127.0.0.1:${port}/health/ready`).then(
            (res) => res.status === 200,
            () => false,
          ),
        { timeoutMs: 180_000, intervalMs: 250, what: 'npm start to be ready' },
      );
      tree = descendants(run.child.pid!);
      run.child.kill('SIGTERM');
      await waitFor(() => [run.child.pid!, ...tree].every((pid) => !alive(pid)), {
        timeoutMs: 30_000,
        intervalMs: 100,
        what: 'the server to exit',
      });
      expect(run.output()).toMatch(/shutdown: SIGTERM: not ready\n/);
      expect(run.output()).toMatch(/shutdown: closed after \d+ ms/);
      await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
    } finally {
      for (const pid of [...tree, ...descendants(run.child.pid!)])
        if (alive(pid)) process.kill(pid, 'SIGKILL');
      run.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
