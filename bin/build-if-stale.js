'use strict';
/*
 * Shared by bin/vault.js and bin/start.js: builds the service (`nest build`, output on stderr) only when
 * dist/ is missing or older than a file the build reads, so that a start or a command runs the compiled
 * code at once and never stale code.
 */
const { spawnSync } = require('node:child_process');
const { readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');

const mtime = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0;

/** The newest modification time of the files the build reads (0 when there is no src/ to build from). */
function newestSource() {
  // An image or a package ships dist/ without src/: then there is nothing to rebuild from.
  if (mtime(join(root, 'src')) === 0) return 0;
  let newest = Math.max(
    ...['tsconfig.json', 'tsconfig.build.json', 'nest-cli.json', 'package.json', 'package-lock.json'].map(
      (f) => mtime(join(root, f)),
    ),
  );
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else newest = Math.max(newest, mtime(path));
    }
  };
  walk(join(root, 'src'));
  // The card elements' browser code (built into elements/dist by the same build).
  if (mtime(join(root, 'elements', 'src'))) walk(join(root, 'elements', 'src'));
  newest = Math.max(newest, mtime(join(root, 'scripts', 'build-elements.mjs')));
  return newest;
}

/**
 * Builds when `entry` (a file under dist/) is missing or older than the sources; exits the process
 * when the build fails. Returns the absolute path of the entry.
 */
function buildIfStale(entry, what) {
  const path = join(root, entry);
  const built = mtime(path);
  if (built !== 0 && newestSource() <= built) return path;
  process.stderr.write(
    built === 0
      ? 'Building the service (first run)...\n'
      : 'Sources changed since the last build: building...\n',
  );
  const nest = require.resolve('@nestjs/cli/bin/nest.js', { paths: [root] });
  const result = spawnSync(process.execPath, [nest, 'build'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (result.status !== 0) {
    process.stderr.write(`The build failed: ${what} cannot run.\n`);
    process.exit(result.status ?? 1);
  }
  // The browser code of the card elements: esbuild is a development dependency, absent from an image,
  // which ships elements/dist already built.
  const elements = join(root, 'scripts', 'build-elements.mjs');
  if (mtime(elements)) {
    const built = spawnSync(process.execPath, [elements], { cwd: root, stdio: ['ignore', 2, 2] });
    if (built.status !== 0) {
      process.stderr.write(`The build of the card elements failed: ${what} cannot run.\n`);
      process.exit(built.status ?? 1);
    }
  }
  return path;
}

module.exports = { buildIfStale };
