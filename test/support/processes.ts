import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { waitFor } from './wait';

export const ROOT = join(__dirname, '..', '..');

/**
 * A port for a spawned server to listen on, below the ephemeral range (32768-60999 on Linux) from which
 * the system picks `listen(0)` ports and the local ports of outgoing connections, which could take a port
 * found free there before the server binds it. At random in 20000-32767, checked free by binding it.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    if (!handedOut.has(port) && (await canBind(port))) {
      handedOut.add(port);
      return port;
    }
  }
}

/** Ports this process has handed out: a second caller gets another. */
const handedOut = new Set<number>();

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export interface Spawned {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/**
 * Runs a JavaScript file of the repository (bin/vault.js, dist/main.js) with this Node.js; `input`, when
 * given, is its standard input (then closed).
 */
export function spawnJs(
  entry: string,
  args: string[],
  env: Record<string, string | undefined>,
  input?: string,
): Spawned {
  return spawnNode([join(ROOT, entry), ...args], env, input);
}

function spawnNode(argv: string[], env: Record<string, string | undefined>, input?: string): Spawned {
  const child = spawn(process.execPath, argv, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (input !== undefined) child.stdin?.end(input);
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

export async function waitForReady(port: number, timeoutMs = 45_000): Promise<void> {
  await waitFor(
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200;
      } catch {
        return false; // not listening yet
      }
    },
    { timeoutMs, intervalMs: 200, what: `the server on port ${port} to become ready` },
  );
}

export async function stop(spawned: Spawned): Promise<void> {
  if (spawned.child.exitCode === null && spawned.child.signalCode === null) spawned.child.kill('SIGTERM');
  await spawned.exited;
}
