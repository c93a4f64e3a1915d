#!/usr/bin/env node
'use strict';
/*
 * `npm run cli -- <command>` (or `npx vault <command>`): runs the compiled CLI, dist/cli.js. When dist/ is
 * missing or older than a source file it builds first, so a command starts in well under a second
 * instead of compiling TypeScript on every call, and never runs stale code.
 */
const { buildIfStale } = require('./build-if-stale');

require(buildIfStale('dist/cli.js', 'the CLI'));
