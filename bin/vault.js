#!/usr/bin/env node
'use strict';
/*
 * `npm run cli -- <command>` (or `npx vault <command>`): runs the compiled CLI, dist/cli.js. When dist/ is
 * missing or older than a source file it builds first (`nest build`, output on stderr), so a command
 * starts in well under a second instead of compiling TypeScript on every call, and never runs stale code.
 */
const { spawnSync } = require('node:child_process');
const { readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const entry = join(root, 'dist', 'cli.js');

const mtime = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0;

/** The newest modification time of the files the build reads. */
function newestSource() {
  let newest = Math.max(
    ...['tsconfig.json', 'tsconfig.build.json', 'nest-cli.json', 'package-lock.json'].map((f) =>
      mtime(join(root, f)),
    ),
  );
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else newest = Math.max(newest, mtime(path));
    }
  };
  // An image or a package ships dist/ without src/: then there is nothing to rebuild from.
  if (mtime(join(root, 'src')) === 0) return 0;
  walk(join(root, 'src'));
  return newest;
}

const built = mtime(entry);
if (built === 0 || newestSource() > built) {
  process.stderr.write(
    built === 0
      ? 'Building the service (first run)...\n'
      : 'Sources changed since the last build: building...\n',
  );
  const nest = require.resolve('@nestjs/cli/bin/nest.js', { paths: [root] });
  const result = spawnSync(process.execPath, [nest, 'build'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (result.status !== 0) {
    process.stderr.write('The build failed: the CLI cannot run.\n');
    process.exit(result.status ?? 1);
  }
}
require(entry);
