#!/usr/bin/env node
'use strict';
/*
 * `npm start`: runs the compiled server, dist/main.js, building it first only when dist/ is missing or
 * older than a source file (a restart without changes takes seconds, not a full `nest build`).
 */
const { buildIfStale } = require('./build-if-stale');

// One process, no balancer in front of it: Ctrl-C need not wait for a health check to notice
// (SHUTDOWN_DRAIN_DELAY_MS, docs/operations.md "Stopping").
process.env.SHUTDOWN_DRAIN_DELAY_MS ??= '0';

require(buildIfStale('dist/main.js', 'the server'));
