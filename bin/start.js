#!/usr/bin/env node
'use strict';
/*
 * `npm start`: runs the compiled server, dist/main.js, building it first only when dist/ is missing or
 * older than a source file (a restart without changes takes seconds, not a full `nest build`).
 */
const { buildIfStale } = require('./build-if-stale');

require(buildIfStale('dist/main.js', 'the server'));
