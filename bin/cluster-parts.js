'use strict';
/*
 * What bin/cluster.js and bin/cluster-ha.js share: finding daemons, free ports, launching a child with its
 * output in a log file, waiting for a condition, one-statement queries, and dropping root for daemons that
 * refuse it (PgBouncer, PostgreSQL).
 */
const { spawn, spawnSync } = require('node:child_process');
const { accessSync, chownSync, constants, createWriteStream } = require('node:fs');
const { createServer } = require('node:net');
const { delimiter, join } = require('node:path');
const { Client } = require('pg');

const ROOT = join(__dirname, '..');
/** How much of a child's output is kept in memory (all of it goes to its log file). */
const TAIL_CHARS = 64 * 1024;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The path of an executable on PATH or in the sbin directories daemons are installed to; undefined if none. */
function findExecutable(name) {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin'];
  for (const dir of dirs.filter(Boolean)) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * A port for a daemon or an instance to listen on, taken below the ephemeral range (32768-60999 on Linux),
 * from which the system picks both `listen(0)` ports and the local ports of outgoing connections: a port
 * found free there can be taken by a connection to PgBouncer or PostgreSQL before the daemon meant for it
 * binds it (HAProxy once failed so). Chosen at random in 20000-32767, checked free by binding it, and never
 * handed out twice by this process.
 */
const handedOut = new Set();

function canBind(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function freePort() {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    if (!handedOut.has(port) && (await canBind(port))) {
      handedOut.add(port);
      return port;
    }
  }
}

async function waitFor(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await sleep(100);
  }
}

/** A daemon or instance: its output appended to `logFile` (and the end of it kept), its exit a promise. */
function launch(name, command, args, { env, logFile, detached = true, uid, gid, cwd = ROOT }) {
  const child = spawn(command, args, {
    cwd,
    ...(uid === undefined ? {} : { uid, gid }),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a Ctrl-C in the terminal reaches the cluster alone, which stops each in order.
    detached,
  });
  const log = createWriteStream(logFile, { flags: 'a' });
  let tail = '';
  const keep = (chunk) => {
    log.write(chunk);
    tail = (tail + chunk.toString()).slice(-TAIL_CHARS);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  // `close`, not `exit`: its output has been read to the end by then.
  const exited = new Promise((resolve) =>
    child.once('close', (code, signal) => {
      log.end();
      resolve(code ?? (signal ? `${signal}` : null));
    }),
  );
  return {
    name,
    child,
    exited,
    output: () => tail,
    running: () => child.exitCode === null && child.signalCode === null,
  };
}

async function query(url, sql) {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function withDatabase(url, database) {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * The user a daemon that refuses root (PgBouncer, PostgreSQL) runs as when this process is root: `postgres`,
 * else `nobody`. Undefined when this process is not root (daemons run as this user).
 */
function daemonUser() {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    const id = (flag) => Number(spawnSync('id', [flag, name], { encoding: 'utf8' }).stdout.trim());
    const uid = id('-u');
    if (Number.isInteger(uid) && uid > 0) return { name, uid, gid: id('-g') };
  }
  throw new Error('daemons do not run as root, and neither a postgres nor a nobody user was found');
}

/** Gives `paths` to the daemon user (when root). */
function giveToDaemonUser(paths) {
  const user = daemonUser();
  if (user) for (const path of paths) chownSync(path, user.uid, user.gid);
  return user;
}

/**
 * PgBouncer refuses to run as root: then it runs as the daemon user, which is given `paths` (its directory
 * and files). Answers the arguments that make it switch user.
 */
function dropRoot(paths) {
  const user = giveToDaemonUser(paths);
  return user ? ['-u', user.name] : [];
}

module.exports = {
  ROOT,
  sleep,
  findExecutable,
  freePort,
  waitFor,
  launch,
  query,
  withDatabase,
  dropRoot,
  giveToDaemonUser,
};
