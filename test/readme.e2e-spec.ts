import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { freePort, ROOT, Spawned, spawnJs, stop, waitForReady } from './support/processes';

/**
 * The README's shell examples run as pasted, in order, in one shell, against a started service (the built
 * one, dist/main.js, on the embedded database, as `npm start` serves it): every variable a block uses is
 * set by an earlier block, and a failing command or a curl answered 4xx/5xx stops the run.
 *
 * A block is left out only when the line before it (blank lines aside) is the marker
 * `<!-- readme-test: skip (why) -->`: `npm install` and `npm start` (this test starts the service itself)
 * and the test commands. The examples need `jq` and `curl`, as the README says.
 */
const SKIP = /^<!-- readme-test: skip \(.+\) -->$/;

interface Block {
  file: string;
  line: number;
  code: string;
  skipped: boolean;
}

/** The fenced blocks of a Markdown file, with their language. */
function fencedBlocks(file: string): (Block & { lang: string })[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const blocks: (Block & { lang: string })[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const indent = open[1].length;
    let end = i + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end])) end++;
    let before = i - 1;
    while (before >= 0 && lines[before].trim() === '') before--;
    blocks.push({
      file,
      line: i + 1,
      lang: open[2],
      code: lines
        .slice(i + 1, end)
        .map((l) => l.slice(indent))
        .join('\n'),
      skipped: before >= 0 && SKIP.test(lines[before].trim()),
    });
    i = end;
  }
  return blocks;
}

const shellBlocks = (file: string): Block[] =>
  fencedBlocks(file).filter((b) => b.lang === 'sh' || b.lang === 'bash');

/** Every Markdown file whose examples are checked for idempotency keys: the README, docs/ and examples/. */
function markdownFiles(): string[] {
  const found: string[] = ['README.md'];
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const path = join(dir, name);
      if (name === 'node_modules') continue;
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) found.push(relative(ROOT, join(ROOT, path)));
    }
  };
  walk('docs');
  walk('examples');
  return found;
}

/** A block's commands: continuation lines joined, comments and here-documents' bodies kept as they are. */
const commands = (code: string): string[] =>
  code
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => !l.trim().startsWith('#'));

/** A request that moves money: a payment, its capture, void or refund. */
const MONEY = /\/orchestration\/transactions(\/[^/\s'"]+\/(capture|void|refunds))?(?=[\s'"]|$)/;

describe('the README examples', () => {
  it('each curl fails on an error status, and few blocks are left out', () => {
    const blocks = shellBlocks('README.md');
    const run = blocks.filter((b) => !b.skipped);
    expect(run.length).toBeGreaterThanOrEqual(3);
    expect(blocks.filter((b) => b.skipped).map((b) => b.code.split('\n')[0])).toEqual([
      'npm install',
      'npm run test:quick',
      'npm test',
    ]);
    for (const block of run)
      for (const line of commands(block.code).filter((l) => /\bcurl\b/.test(l)))
        expect(`README.md:${block.line}: ${line}`).toMatch(/curl -fsS /);
  });

  it('every payment, capture, void and refund in README.md, docs/ and examples/ sends BT-IDEMPOTENCY-KEY', () => {
    const missing: string[] = [];
    for (const file of markdownFiles())
      for (const block of shellBlocks(file))
        for (const command of commands(block.code)) {
          if (!/\b(curl|json)\b/.test(command) || !MONEY.test(command)) continue;
          const posts = / -d |--data|-X POST/.test(command);
          if (posts && !command.includes('BT-IDEMPOTENCY-KEY'))
            missing.push(`${file}:${block.line}: ${command}`);
        }
    expect(missing).toEqual([]);
  });

  describe('run in order against a started service', () => {
    let dataDir: string;
    let server: Spawned;
    let base: string;
    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'vault-readme-'));
      const port = await freePort();
      server = spawnJs('dist/main.js', [], {
        DATABASE_URL: '',
        ENCRYPTION_KEYS: '',
        DATA_DIR: dataDir,
        PORT: String(port),
        BOOTSTRAP: 'false',
        LOG_LEVEL: 'warn',
      });
      await waitForReady(port, 90_000);
      base = `http://127.0.0.1:${port}`;
    }, 120_000);
    afterAll(async () => {
      if (server) await stop(server);
      // What the tour writes into the project's folder.
      for (const name of ['tour.sh', 'tour.env']) rmSync(join(ROOT, name), { force: true });
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('jq and curl are installed (the README asks for them)', () => {
      for (const tool of ['jq', 'curl'])
        expect(`${tool}: ${spawnSync(tool, ['--version']).status}`).toBe(`${tool}: 0`);
    });

    it('every block succeeds, each using only what earlier blocks set', async () => {
      const run = shellBlocks('README.md').filter((b) => !b.skipped);
      // One shell, as a reader pasting block after block; `set -u` fails a variable no block set.
      const script = [
        'set -euo pipefail',
        ...run.map((b) => `echo "== README.md:${b.line}" >&2\n${b.code}`),
        'echo "== done" >&2',
      ].join('\n');
      const shell = spawn('bash', ['-c', script], {
        cwd: ROOT,
        // The service's address and its embedded database (the CLI reaches the server through it); no
        // variable the README uses comes from here but BASE, which the README sets to its default otherwise.
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          BASE: base,
          DATA_DIR: dataDir,
          DATABASE_URL: '',
          ENCRYPTION_KEYS: '',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      shell.stdout.on('data', (c: Buffer) => (out += c.toString()));
      shell.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const code = await new Promise<number | null>((resolve) => shell.once('exit', resolve));
      expect({ code, out }).toEqual({ code: 0, out: expect.stringContaining('== done') });
      // What the README says comes back.
      expect(out).toContain('"status": "capture_succeeded"');
      expect(out).toContain('"connection": "Braintree"');
      expect(out).toMatch(
        /\{"number":2,"connection":"Braintree","status":"declined","error_code":"declined"\}/,
      );
      expect(out).toMatch(/"status": "authorization_succeeded",\s+"amount": 1500/);
    }, 240_000);
  });
});
