import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load-config';
import { openDatabase } from '../../src/database/data-source';
import { prepareSoftHsm } from './softhsm';
import { createDatabase } from './test-database';

const ROOT = join(__dirname, '..', '..');

/** When the newest of what `nest build` compiles was last changed. */
function newestSource(): number {
  const sources = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).map((file) =>
    join(ROOT, 'src', file),
  );
  const settings = ['nest-cli.json', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];
  return Math.max(
    ...[...sources, ...settings.map((file) => join(ROOT, file))].map((f) => statSync(f).mtimeMs),
  );
}

/**
 * The built server (`dist/`), which the process tests run (`node dist/main.js`, the CLI): built here when
 * missing or older than the sources, so that `npm test` in a fresh clone needs no `npm run build` first
 * and never tests yesterday's build. `nest build` empties dist/ and writes every file again.
 */
function buildServer(): void {
  const main = join(ROOT, 'dist', 'main.js');
  if (existsSync(main) && statSync(main).mtimeMs >= newestSource()) return;
  const built = spawnSync(process.execPath, [require.resolve('@nestjs/cli/bin/nest.js'), 'build'], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (built.status !== 0) throw new Error('nest build failed: the process tests need dist/');
}

/** One database per test run, migrated once; workers inherit its URL through the environment. */
export default async function globalSetup(): Promise<void> {
  buildServer();
  // The card elements' browser code, served by every app the tests start (src/modules/elements).
  const built = spawnSync(process.execPath, [join(__dirname, '..', '..', 'scripts', 'build-elements.mjs')], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (built.status !== 0) throw new Error('the build of the card elements failed');
  prepareSoftHsm();
  const { name, url } = await createDatabase();
  process.env.TEST_DATABASE_NAME = name;
  process.env.DATABASE_URL = url;
  // One master key for the run, inherited by test workers and the processes they spawn.
  process.env.ENCRYPTION_KEYS ??= `v1:${randomBytes(32).toString('base64')}`;
  const dataSource = await openDatabase(loadConfig({ DATABASE_URL: url }));
  await dataSource.destroy();
}
