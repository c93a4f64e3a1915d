import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_FILE_NAME } from '../src/database/embedded-lock';
import { freePort, Spawned, spawnJs, stop, waitForReady } from './support/processes';
import { waitFor } from './support/wait';

const TENANT =
  /^\{"tenant_id":"[0-9a-f-]{36}","management_application_id":"[0-9a-f-]{36}","management_key":"key_mgt_[0-9A-Za-z]+"\}$/;

/** Waits until `spawned` has printed `pattern` on stdout (the server prints its key after it listens). */
async function printed(spawned: Spawned, pattern: RegExp, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    () => {
      if (spawned.child.exitCode !== null)
        throw new Error(`exited before printing ${pattern}\n${spawned.stdout()}\n${spawned.stderr()}`);
      return pattern.test(spawned.stdout());
    },
    { timeoutMs, intervalMs: 100, what: `${pattern} on stdout` },
  ).catch((error: Error) => {
    throw new Error(`not printed: ${error.message}\n${spawned.stdout()}\n${spawned.stderr()}`);
  });
}

/**
 * The CLI as users run it (`npm run cli` is `node bin/vault.js`: compiled code, built first when stale)
 * against the embedded database (docs/applications.md): with no server it opens the database itself;
 * with the server running it sends the request to the server (its control socket), so nothing it
 * reports is lost; with the database held by anything else it stops with a message.
 */
describe('the CLI with the embedded database', () => {
  let dataDir: string;
  const env = () => ({ DATABASE_URL: '', ENCRYPTION_KEYS: '', DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  const cli = async (...args: string[]) => {
    const run = spawnJs('bin/vault.js', args, env());
    const code = await run.exited;
    return { code, stdout: run.stdout().trim(), stderr: run.stderr() };
  };
  const server = async (extra: Record<string, string> = {}) => {
    const port = await freePort();
    const spawned = spawnJs('dist/main.js', [], {
      ...env(),
      PORT: String(port),
      BOOTSTRAP: 'false',
      ...extra,
    });
    await waitForReady(port);
    return { spawned, base: `http://127.0.0.1:${port}`, port };
  };
  const self = async (base: string, key: string) =>
    (await fetch(`${base}/tenants/self`, { headers: { 'BT-API-KEY': key } })).status;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'vault-cli-'));
    // Builds dist/ when it is missing or stale, so that the servers below run the same code.
    const help = await cli('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/tenant/);
  }, 180_000);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('with no server running, opens the database itself; a server started later serves the tenant', async () => {
    const created = await cli('tenant', 'create', '--name', 'stopped');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(TENANT);
    const { management_key: key } = JSON.parse(created.stdout) as { management_key: string };
    const running = await server();
    try {
      expect(await self(running.base, key)).toBe(200);
    } finally {
      await stop(running.spawned);
    }
  }, 120_000);

  it('with the server running, goes through the server: the key works at once and after a restart', async () => {
    let running = await server();
    let key: string;
    try {
      const created = await cli('tenant', 'create', '--name', 'running');
      expect(created.code).toBe(0);
      expect(created.stdout).toMatch(TENANT);
      key = (JSON.parse(created.stdout) as { management_key: string }).management_key;
      expect(await self(running.base, key)).toBe(200);
      const rotated = await cli('keys', 'rotate');
      expect(JSON.parse(rotated.stdout)).toEqual({ active_version: 'v1', rewrapped_tenants: 0 });
      const verified = await cli('logs', 'verify');
      expect(verified.code).toBe(0);
      // The two tenants, and the system tenant, whose log recorded the rotation (docs/keys.md).
      expect(JSON.parse(verified.stdout)).toMatchObject({ tenants_checked: 3, problems: [] });
      const system = await cli('logs', '--system');
      expect(system.stdout.split('\n').map((line) => JSON.parse(line).message)).toEqual([
        'Key rotation to v1 started',
        'Key rotation to v1 finished: 0 tenant keys and 0 signing keys re-wrapped',
      ]);
    } finally {
      await stop(running.spawned);
    }
    running = await server();
    try {
      expect(await self(running.base, key)).toBe(200);
    } finally {
      await stop(running.spawned);
    }
  }, 180_000);

  it('with the database held by a process that takes no requests, stops with a message and creates nothing', async () => {
    const holder = spawn('sleep', ['60']);
    try {
      writeFileSync(
        join(dataDir, LOCK_FILE_NAME),
        JSON.stringify({ pid: holder.pid, role: 'cli', since: new Date().toISOString() }),
      );
      const refused = await cli('tenant', 'create', '--name', 'lost');
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toMatch(/in use by another command \(pid \d+\)/);
      expect(refused.stderr).toMatch(/DATABASE_URL/);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      holder.kill();
    }
    // The holder is gone (once it has exited): its lock is stale and is taken over.
    if (holder.exitCode === null && holder.signalCode === null)
      await new Promise((resolve) => holder.once('exit', resolve));
    expect((await cli('tenant', 'create', '--name', 'after')).code).toBe(0);
  }, 120_000);
});

describe('server start-up output', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'vault-start-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('logs no route listing at info, then prints "listening on" and, last, the first-start key banner', async () => {
    const port = await freePort();
    const env = {
      DATABASE_URL: '',
      ENCRYPTION_KEYS: '',
      DATA_DIR: dataDir,
      PORT: String(port),
      PUBLIC_BASE_URL: `http://localhost:${port}`,
      LOG_LEVEL: 'info',
      BOOTSTRAP: 'true',
    };
    const first = spawnJs('dist/main.js', [], env);
    try {
      await printed(first, /={78}\n\s*$/);
      const out = first.stdout();
      expect(out).not.toMatch(/Mapped \{/);
      expect(out).not.toMatch(/dependencies initialized/);
      const lines = out.trimEnd().split('\n');
      const listening = lines.indexOf(`listening on http://localhost:${port}`);
      expect(listening).toBeGreaterThanOrEqual(0);
      // After "listening on", only the banner: nothing else scrolls it away.
      const after = lines.slice(listening + 1).join('\n');
      expect(after).toMatch(/^\n?={78}\n FIRST START/);
      expect(after).toMatch(/key_mgt_[0-9A-Za-z]+/);
      expect(lines[lines.length - 1]).toMatch(/^={78}$/);

      // A second server on the same port: one line, before anything starts (no tenant, no key).
      const second = spawnJs('dist/main.js', [], {
        ...env,
        DATA_DIR: mkdtempSync(join(tmpdir(), 'vault-port-')),
      });
      expect(await second.exited).toBe(1);
      expect(second.stderr().trim()).toBe(
        `Port ${port} is already in use: stop whatever listens there, or set PORT to another port.`,
      );
      expect(second.stdout()).toBe('');
    } finally {
      await stop(first);
    }
  }, 120_000);
});
