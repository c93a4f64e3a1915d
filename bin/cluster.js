#!/usr/bin/env node
'use strict';
/*
 * `npm run cluster`: the production topology on one machine (docs/operations.md, "A cluster"): PgBouncer
 * in transaction mode in front of PostgreSQL, two instances of the service (`node dist/main.js`, built
 * first when stale) and HAProxy in front of them, health-checking `/health/ready` and retrying only a
 * connection that failed before the request reached an instance (never a request an instance may have acted on). A database of its own is created on the PostgreSQL server of
 * DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) and dropped at the end. Ctrl-C or
 * SIGTERM stops everything. Tests and the soak use the same code: `startCluster()` (types in cluster.d.ts).
 */
const { spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const { connect } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { buildIfStale } = require('./build-if-stale');
const { startDatabaseNodes } = require('./cluster-ha');
const {
  ROOT,
  dropRoot,
  findExecutable,
  freePort,
  launch,
  query,
  waitFor,
  withDatabase,
} = require('./cluster-parts');

const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const INSTALL = {
  pgbouncer:
    'apt-get install pgbouncer (Debian, Ubuntu), dnf install pgbouncer (Fedora), brew install pgbouncer (macOS)',
  haproxy:
    'apt-get install haproxy (Debian, Ubuntu), dnf install haproxy (Fedora), brew install haproxy (macOS)',
};
/** Both programs, or an error saying which is missing and how to install it. */
function requireTools() {
  const found = { pgbouncer: findExecutable('pgbouncer'), haproxy: findExecutable('haproxy') };
  const missing = Object.keys(found).filter((name) => !found[name]);
  if (missing.length)
    throw new Error(
      missing
        .map((name) => `${name} is not installed (needed by npm run cluster): ${INSTALL[name]}`)
        .join('\n'),
    );
  return found;
}

/** Asks HAProxy's runtime API (its stats socket) one command; answers its text. */
function haproxyCommand(socketPath, command) {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(socketPath, () => socket.end(`${command}\n`));
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

/** `show stat` as one object per server of the backend: status (UP, DOWN...), retries, redispatches, answers. */
async function backendStats(socketPath) {
  const [header, ...rows] = (await haproxyCommand(socketPath, 'show stat')).trim().split('\n');
  const columns = header.replace(/^# /, '').split(',');
  return rows
    .map((row) => Object.fromEntries(row.split(',').map((value, i) => [columns[i], value])))
    .filter((row) => row.pxname === 'instances' && row.svname !== 'BACKEND')
    .map((row) => ({
      name: row.svname,
      status: row.status,
      requests: Number(row.stot || 0),
      retries: Number(row.wretr || 0),
      redispatches: Number(row.wredis || 0),
      connectionErrors: Number(row.econ || 0),
      responseErrors: Number(row.eresp || 0),
      http5xx: Number(row.hrsp_5xx || 0),
      current: Number(row.scur || 0),
    }));
}

/** PgBouncer in transaction mode, for the one database; trust (or md5 with the URL's password) on 127.0.0.1 only. */
function pgbouncerConfig({ dir, port, server, database }) {
  const password = decodeURIComponent(server.password);
  return {
    ini: [
      '[databases]',
      `${database} = host=${server.hostname} port=${server.port || 5432} dbname=${database}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      `auth_type = ${password ? 'md5' : 'trust'}`,
      `auth_file = ${join(dir, 'userlist.txt')}`,
      // A server connection is a client's for one transaction only: what makes the pool small.
      'pool_mode = transaction',
      // Server connections per database and user: above what the instances run at once, below max_connections.
      'default_pool_size = 20',
      'max_client_conn = 1000',
      // A transaction waiting longer for a server connection fails instead of holding its request.
      'query_wait_timeout = 15',
      // After PostgreSQL went away (a restart, a failover), it is asked again every second, not every 15.
      'server_login_retry = 1',
      'server_connect_timeout = 5',
      // Transaction mode runs no reset between clients (a session's state is not the service's to keep).
      'server_reset_query =',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
    users: `"${decodeURIComponent(server.username)}" "${password.replace(/"/g, '""')}"\n`,
  };
}

/** What the balancer answers when no instance can take a request. */
const BALANCER_UNAVAILABLE = {
  type: 'about:blank',
  title: 'Service Unavailable',
  status: 503,
  detail: 'No instance of the service can take the request now; retry shortly.',
  code: 'service_unavailable',
};

/** HAProxy in front of the instances (docs/operations.md says why each setting). */
function haproxyConfig({ dir, port, instances }) {
  return [
    'global',
    '  maxconn 4096',
    `  stats socket ${join(dir, 'haproxy.sock')} mode 600 level admin`,
    '  log stdout format raw local0 info',
    '',
    'defaults',
    '  mode http',
    '  log global',
    '  option httplog',
    '  option dontlognull',
    '  timeout connect 2s',
    '  timeout client 65s',
    '  timeout server 65s',
    '  timeout http-request 10s',
    '  timeout http-keep-alive 10s',
    '  timeout queue 10s',
    '  retries 3',
    '  option redispatch 1',
    // Only a connection that failed before any byte of the request reached an instance is sent again:
    // never one an instance may have acted on (no empty-response, response-timeout or status retries).
    '  retry-on conn-failure',
    // No instance ready (every one is waiting for the database, as during a failover): the service's own
    // problem, with a hint to retry, rather than HAProxy's HTML page.
    `  http-error status 503 content-type application/problem+json string '${JSON.stringify(BALANCER_UNAVAILABLE)}' hdr retry-after 1`,
    '',
    'frontend vault',
    `  bind 127.0.0.1:${port}`,
    '  option forwardfor',
    '  default_backend instances',
    '',
    'backend instances',
    '  balance roundrobin',
    '  option httpchk',
    '  http-check send meth GET uri /health/ready',
    '  http-check expect status 200',
    '  default-server inter 1s fastinter 250ms downinter 1s fall 2 rise 2',
    ...instances.map((instance) => `  server ${instance.name} 127.0.0.1:${instance.port} check`),
    '',
  ].join('\n');
}

/**
 * Starts the cluster and answers it once every instance is ready and HAProxy sends to all of them.
 * Options: instances (2), serverUrl (the PostgreSQL server, default DATABASE_URL or the local one),
 * databasePrefix ('vault_cluster'), env (more settings for every instance), logLevel ('info'),
 * keepDatabase, keepLogs, build (true: build dist/ when stale), log (a line printer, silent by default).
 */
async function startCluster(options = {}) {
  const tools = requireTools();
  const log = options.log ?? (() => undefined);
  if (options.build !== false) buildIfStale('dist/main.js', 'the cluster');
  const dir = mkdtempSync(join(tmpdir(), 'vault-cluster-'));
  let server = new URL(options.serverUrl ?? process.env.DATABASE_URL ?? DEFAULT_SERVER_URL);
  const database = `${options.databasePrefix ?? 'vault_cluster'}_${Date.now()}_${randomBytes(3).toString('hex')}`;
  /** `--ha`: etcd, the Patroni nodes and the database's HAProxy (bin/cluster-ha.js); else the server above. */
  let ha;
  let directUrl = withDatabase(server.toString(), database);
  const daemons = [];
  const instances = [];
  let created = false;
  let stopped;

  const stop = () =>
    (stopped ??= (async () => {
      const codes = await Promise.all(instances.map((instance) => instance.stop()));
      for (const daemon of daemons.reverse()) {
        if (daemon.running()) daemon.child.kill('SIGTERM');
        await daemon.exited;
      }
      // The HA cluster's data directories go with the run directory.
      await ha?.stop();
      if (created && !ha && !options.keepDatabase)
        await query(server.toString(), `DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).catch((error) =>
          log(`could not drop the database ${database}: ${error.message}`),
        );
      if (!options.keepLogs) rmSync(dir, { recursive: true, force: true });
      process.removeListener('exit', killAll);
      return codes;
    })());
  // Should this process end without stopping the cluster, nothing it started outlives it.
  const killAll = () => {
    for (const p of [...daemons, ...instances.map((i) => i.process), ...(ha?.processes() ?? [])])
      if (p?.running()) p.child.kill('SIGKILL');
    // A PostgreSQL outlives its Patroni: each is killed by its pid file.
    ha?.killPostgres();
  };
  process.once('exit', killAll);

  try {
    if (options.ha) {
      ha = await startDatabaseNodes({ dir, haproxy: tools.haproxy, log });
      server = new URL(ha.serverUrl);
      directUrl = withDatabase(server.toString(), database);
    }
    await query(server.toString(), `CREATE DATABASE "${database}"`);
    created = true;
    const pgbouncerPort = await freePort();
    const pool = pgbouncerConfig({ dir, port: pgbouncerPort, server, database });
    writeFileSync(join(dir, 'pgbouncer.ini'), pool.ini);
    writeFileSync(join(dir, 'userlist.txt'), pool.users, { mode: 0o600 });
    const asUser = dropRoot([dir, join(dir, 'pgbouncer.ini'), join(dir, 'userlist.txt')]);
    const pooledUrl = new URL(directUrl);
    pooledUrl.hostname = '127.0.0.1';
    pooledUrl.port = String(pgbouncerPort);
    /** Launches PgBouncer (in `daemons` at `at`) and waits until it answers a query through the pool. */
    const startPgbouncer = async (at) => {
      const proc = launch('pgbouncer', tools.pgbouncer, [...asUser, join(dir, 'pgbouncer.ini')], {
        logFile: join(dir, 'pgbouncer.out'),
      });
      daemons[at] = proc;
      await waitFor(
        async () => {
          if (!proc.running()) throw new Error(`pgbouncer exited:\n${proc.output()}`);
          return query(pooledUrl.toString(), 'SELECT 1').then(
            () => true,
            () => false,
          );
        },
        10_000,
        'PgBouncer to accept connections',
      );
      return proc;
    };
    let pgbouncer = await startPgbouncer(daemons.length);

    const balancerPort = options.port ?? (await freePort());
    const url = `http://127.0.0.1:${balancerPort}`;
    // The environment's key settings when it has them (ENCRYPTION_KEYS, or KEY_PROVIDER and its own), else
    // a key made for this run (printed by `npm run cluster`).
    const keyProvider = options.env?.KEY_PROVIDER ?? process.env.KEY_PROVIDER;
    const keys =
      options.env?.ENCRYPTION_KEYS ??
      process.env.ENCRYPTION_KEYS ??
      (keyProvider && keyProvider !== 'env' ? undefined : `v1:${randomBytes(32).toString('base64')}`);
    for (let n = 1; n <= (options.instances ?? 2); n++) {
      const port = await freePort();
      const env = {
        DATABASE_URL: pooledUrl.toString(),
        // LISTEN needs a session: the one connection that bypasses PgBouncer.
        DATABASE_LISTEN_URL: directUrl,
        DB_PREPARED_STATEMENTS: 'false',
        PORT: String(port),
        PUBLIC_BASE_URL: url,
        BOOTSTRAP: 'true',
        // HAProxy adds X-Forwarded-For: the failure limiter and the public tokenize limit count clients.
        TRUST_PROXY: '127.0.0.1',
        LOG_LEVEL: options.logLevel ?? 'info',
        ...options.env,
        ...(keys ? { ENCRYPTION_KEYS: keys } : {}),
      };
      instances.push(instanceOf(`i${n}`, port, env, dir, () => socketPath));
    }
    const socketPath = join(dir, 'haproxy.sock');
    writeFileSync(join(dir, 'haproxy.cfg'), haproxyConfig({ dir, port: balancerPort, instances }));
    const checked = spawnSync(tools.haproxy, ['-c', '-q', '-f', join(dir, 'haproxy.cfg')], {
      encoding: 'utf8',
    });
    if (checked.status !== 0)
      throw new Error(`haproxy refuses its configuration:\n${checked.stderr}${checked.stdout}`);

    // Together: migrations and the first tenant are each made once, under an advisory lock.
    await Promise.all(instances.map((instance) => instance.start({ balanced: false })));
    const haproxy = launch('haproxy', tools.haproxy, ['-db', '-f', join(dir, 'haproxy.cfg')], {
      logFile: join(dir, 'haproxy.log'),
    });
    daemons.push(haproxy);
    await waitFor(
      async () => {
        if (!haproxy.running()) throw new Error(`haproxy exited:\n${haproxy.output()}`);
        const stats = await backendStats(socketPath).catch(() => []);
        return stats.length === instances.length && stats.every((s) => s.status === 'UP');
      },
      20_000,
      'HAProxy to see every instance ready',
    );
    const managementKey = instances
      .map((instance) => /(key_mgt_[0-9A-Za-z]+)/.exec(instance.output())?.[1])
      .find(Boolean);
    return {
      url,
      database,
      databaseUrl: pooledUrl.toString(),
      directUrl,
      ha,
      encryptionKeys: keys,
      managementKey,
      dir,
      pgbouncer: {
        port: pgbouncerPort,
        get pid() {
          return pgbouncer.child.pid;
        },
        /** SIGTERM (PgBouncer's immediate shutdown: its connections are cut), its exit, a start on the same port. */
        async restart() {
          const started = Date.now();
          if (pgbouncer.running()) pgbouncer.child.kill('SIGTERM');
          await pgbouncer.exited;
          const stopMs = Date.now() - started;
          pgbouncer = await startPgbouncer(daemons.indexOf(pgbouncer));
          return { stopMs, readyMs: Date.now() - started - stopMs };
        },
      },
      haproxy: {
        port: balancerPort,
        pid: haproxy.child.pid,
        /** One command to HAProxy's runtime API (`disable server instances/i2`); answers its text. */
        command: (command) => haproxyCommand(socketPath, command),
      },
      instances,
      stats: () => backendStats(socketPath),
      stop,
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

/** One instance of the service: started, stopped (SIGTERM, its exit awaited) and restarted on its port. */
function instanceOf(name, port, env, dir, socketPath) {
  const instance = {
    name,
    port,
    url: `http://127.0.0.1:${port}`,
    process: undefined,
    get pid() {
      return instance.process?.child.pid;
    },
    output: () => instance.process?.output() ?? '',
    /** Starts it and waits until it is ready, and (`balanced`, the default) until HAProxy sends to it again. */
    async start({ balanced = true } = {}) {
      if (instance.process?.running()) throw new Error(`${name} is running`);
      const started = Date.now();
      const proc = launch(name, process.execPath, [join(ROOT, 'dist', 'main.js')], {
        env,
        logFile: join(dir, `${name}.log`),
      });
      instance.process = proc;
      await waitFor(
        async () => {
          if (!proc.running()) throw new Error(`${name} exited while starting:\n${proc.output()}`);
          return fetch(`${instance.url}/health/ready`).then(
            (res) => res.status === 200,
            () => false,
          );
        },
        120_000,
        `${name} to be ready`,
      );
      const readyMs = Date.now() - started;
      if (balanced)
        await waitFor(
          async () => (await backendStats(socketPath())).find((s) => s.name === name)?.status === 'UP',
          20_000,
          `HAProxy to send to ${name} again`,
        );
      return { readyMs, balancedMs: Date.now() - started };
    },
    /** SIGTERM, then its exit (its shutdown: docs/operations.md); answers its exit code and how long it took. */
    async stop() {
      const proc = instance.process;
      if (!proc) return { code: undefined, stopMs: 0, shutdown: [] };
      const started = Date.now();
      if (proc.running()) proc.child.kill('SIGTERM');
      const code = await proc.exited;
      const shutdown = proc
        .output()
        .split('\n')
        .filter((line) => line.startsWith('shutdown:'));
      return { code, stopMs: Date.now() - started, shutdown };
    },
    /** SIGKILL (a crash: nothing drains), and its exit. */
    async kill() {
      const proc = instance.process;
      if (proc?.running()) proc.child.kill('SIGKILL');
      await proc?.exited;
    },
    /** Stop then start; answers the exit code and the durations of each part. */
    async restart() {
      const stopped = await instance.stop();
      const started = await instance.start();
      return { ...stopped, ...started };
    },
  };
  return instance;
}

async function main() {
  const args = process.argv.slice(2);
  const value = (flag) => {
    const at = args.indexOf(flag);
    return at === -1 ? undefined : args[at + 1];
  };
  if (args.includes('--help')) {
    process.stdout.write(
      'Usage: npm run cluster [-- --ha] [--instances N] [--port P] [--keep-database] [--keep-logs]\n' +
        'PgBouncer (transaction mode), N instances of the service (2) and HAProxy in front of them.\n' +
        'DATABASE_URL names the PostgreSQL server to create a database on (default the local one).\n' +
        '--ha: instead, etcd and two PostgreSQL nodes under Patroni (synchronous replication) in the run\n' +
        'directory, reached through a HAProxy that follows the leader (docs/operations.md).\n' +
        'The instances use ENCRYPTION_KEYS (or KEY_PROVIDER and its settings) when set, else a new key.\n',
    );
    return;
  }
  const say = (line) => process.stdout.write(`${line}\n`);
  const ha = args.includes('--ha');
  say(
    `Starting ${ha ? 'etcd, two PostgreSQL nodes under Patroni, ' : ''}PgBouncer, the instances and HAProxy...`,
  );
  let cluster;
  try {
    cluster = await startCluster({
      ha,
      instances: Number(value('--instances') ?? 2),
      port: value('--port') ? Number(value('--port')) : undefined,
      keepDatabase: args.includes('--keep-database'),
      keepLogs: args.includes('--keep-logs'),
      log: say,
    });
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  const pad = (label) => label.padEnd(18);
  say('');
  say(`${pad('balancer')}${cluster.url}  (HAProxy, checks /health/ready every second)`);
  for (const instance of cluster.instances)
    say(`${pad(`instance ${instance.name}`)}${instance.url}  (pid ${instance.pid})`);
  say(`${pad('pgbouncer')}${cluster.databaseUrl}  (transaction mode)`);
  if (cluster.ha) {
    say(`${pad('etcd')}${cluster.ha.etcd.url}`);
    for (const node of cluster.ha.nodes)
      say(`${pad(`postgresql ${node.name}`)}${node.url}  (Patroni REST API ${node.restUrl})`);
    say(`${pad('database haproxy')}${cluster.directUrl}  (the leader: change notifications, the CLI)`);
  } else say(`${pad('postgresql')}${cluster.directUrl}  (direct: change notifications)`);
  say(`${pad('logs')}${cluster.dir}`);
  if (cluster.managementKey) say(`${pad('management key')}${cluster.managementKey}`);
  if (cluster.encryptionKeys && !process.env.ENCRYPTION_KEYS)
    say(
      `${pad('ENCRYPTION_KEYS')}${cluster.encryptionKeys}  (made for this run: keep it to read its tokens)`,
    );
  say('');
  say('Ctrl-C (or SIGTERM) stops everything (the instances first, each draining its requests).');
  let stopping = false;
  const onSignal = async () => {
    if (stopping) return;
    stopping = true;
    say('\nStopping...');
    const codes = await cluster.stop();
    say(`instances exited ${codes.map((c, i) => `${cluster.instances[i].name}: ${c.code}`).join(', ')}`);
    process.exit(0);
  };
  process.on('SIGINT', () => void onSignal());
  process.on('SIGTERM', () => void onSignal());
}

module.exports = { startCluster, requireTools };

if (require.main === module) void main();
