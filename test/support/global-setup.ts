import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/app-config';
import { openDatabase } from '../../src/database/data-source';
import { createDatabase } from './test-database';

/** One database per test run, migrated once; workers inherit its URL through the environment. */
export default async function globalSetup(): Promise<void> {
  // The card elements' browser code, served by every app the tests start (src/modules/elements).
  const built = spawnSync(process.execPath, [join(__dirname, '..', '..', 'scripts', 'build-elements.mjs')], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (built.status !== 0) throw new Error('the build of the card elements failed');
  const { name, url } = await createDatabase();
  process.env.TEST_DATABASE_NAME = name;
  process.env.DATABASE_URL = url;
  // One master key for the run, inherited by test workers and the processes they spawn.
  process.env.ENCRYPTION_KEYS ??= `v1:${randomBytes(32).toString('base64')}`;
  const dataSource = await openDatabase(loadConfig({ DATABASE_URL: url }));
  await dataSource.destroy();
}
